"""Right to forget, with proof: a person's data is gone from every table, the rows and the audit
trail stay, the proof remains, and nothing can bring the data back."""

import hashlib
import logging

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import models
from django.db.models import Q

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.assessments.models import PromotionCandidate
from memory_review.audit import chain
from memory_review.audit.models import Transition
from memory_review.memories.erasure import ErasureRefused, erase_subject
from memory_review.memories.models import Erasure, Memory, SourceEvent
from memory_review.memories.services import ERASED, event_record
from memory_review.tenancy.models import Tenant
from tests.factories import make_jev, make_user

pytestmark = pytest.mark.django_db
DANA = "cust-4821"


@pytest.fixture
def demo():
    call_command("seed_demo", "--no-history", verbosity=0)
    return Tenant.objects.get(slug="acme")


def her_phrases(tenant) -> set[str]:
    """Every text of hers: her events, the memories scoped to her or written from her events,
    the candidates that cite either."""
    events = SourceEvent.objects.for_tenant(tenant).filter(user_id=DANA)
    memories = Memory.objects.for_tenant(tenant).filter(user_id=DANA) | Memory.objects.for_tenant(
        tenant
    ).filter(source_event__user_id=DANA)
    candidates = PromotionCandidate.objects.for_tenant(tenant).filter(user_id=DANA)
    phrases = {*events.values_list("text", flat=True), *memories.values_list("content", flat=True)}
    phrases |= set(candidates.values_list("claim", flat=True))
    return {phrase for phrase in phrases if phrase != ERASED}


def every_text_column():
    for model in apps.get_models():
        for field in model._meta.fields:
            if isinstance(field, models.CharField | models.TextField):
                yield model, field.name


def test_erasing_a_demo_user_leaves_none_of_her_words_in_any_table_or_log(demo, caplog):
    phrases = her_phrases(demo)
    assert len(phrases) >= 8  # tickets, chats, the refund exception, the phone number...
    caplog.set_level(logging.DEBUG)

    erasure = erase_subject(
        tenant=demo, user_id=DANA, reason="her written request, ticket 90211", requested_by="t"
    )

    found = [
        (model._meta.label, column, phrase[:40])
        for model, column in every_text_column()
        for phrase in phrases
        if model.objects.filter(**{f"{column}__contains": phrase}).exists()
    ]
    assert found == []
    assert not [phrase for phrase in phrases if phrase in caplog.text]
    assert (erasure.events_erased, erasure.memories_erased) >= (4, 5)
    assert chain.verify(demo) is None


def test_her_rows_stay_deleted_with_their_trail_and_the_proof_can_be_recomputed(demo):
    hers = Q(user_id=DANA) | Q(source_event__user_id=DANA)
    before = dict(Memory.objects.for_tenant(demo).filter(hers).values_list("pk", "content_hash"))
    events = dict(SourceEvent.objects.for_tenant(demo).filter(user_id=DANA).values_list("pk", "text_hash"))
    candidates = dict(
        PromotionCandidate.objects.for_tenant(demo)
        .filter(hers | Q(memory__in=before))
        .values_list("pk", "claim_hash")
    )

    erasure = erase_subject(tenant=demo, user_id=DANA, reason="her request", requested_by="t")

    for memory in Memory.objects.filter(pk__in=before):
        assert (memory.status, memory.content, memory.subject) == ("deleted", ERASED, ERASED)
        assert memory.deleted_at is not None
    moved = Transition.objects.filter(memory_id=min(before)).latest("seq")
    assert (moved.actor, moved.action) == ("system:erasure", "erase")
    assert moved.reason == f"right-to-forget erasure {erasure.pk} for user {DANA}"
    lines = [f"memory:{pk}:{h}" for pk, h in before.items()] + [f"event:{pk}:{h}" for pk, h in events.items()]
    lines += [f"candidate:{pk}:{h}" for pk, h in candidates.items()]
    assert erasure.proof_hash == hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()
    assert (erasure.memories_erased, erasure.events_erased, erasure.candidates_erased) == (
        len(before), len(events), len(candidates)
    )  # fmt: skip
    assert not SourceEvent.objects.filter(user_id=DANA, erased_at__isnull=True).exists()


def test_other_people_and_tenants_are_untouched(demo):
    globex = Tenant.objects.get(slug="globex")
    others = dict(
        Memory.objects.exclude(user_id=DANA).exclude(source_event__user_id=DANA).values_list("pk", "content")
    )

    erase_subject(tenant=demo, user_id=DANA, reason="her request", requested_by="t")

    assert dict(Memory.objects.filter(pk__in=others).values_list("pk", "content")) == others
    assert chain.verify(globex) is None


def test_nothing_can_bring_her_data_back_through_the_api(demo, client):
    from memory_review.tenancy.tokens import token_create

    event = SourceEvent.objects.for_tenant(demo).filter(user_id=DANA).first()
    erase_subject(tenant=demo, user_id=DANA, reason="her request", requested_by="t")
    _, token = token_create(tenant=demo, name="agent")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    memory = client.post(
        "/api/v1/t/acme/memories",
        {"source_event_id": event.pk, "kind": "fact", "subject": "again", "content": "x", "written_by": "bot",
         "scope": {"user_id": DANA}},
        content_type="application/json", **auth,
    )  # fmt: skip
    candidate = client.post(
        "/api/v1/t/acme/candidates",
        {"source_event_id": event.pk, "kind": "fact", "subject": "again", "claim": "x", "proposed_by": "bot"},
        content_type="application/json", **auth,
    )  # fmt: skip

    for response in (memory, candidate):
        assert response.status_code == 409
        assert f"event {event.pk} was erased" in response.json()["error"]


def test_an_assessment_queued_before_the_erasure_never_sends_her_text(demo, standin):
    event = event_record(tenant=demo, source="chat", text="My new number is +44 7700 900555.", user_id=DANA)
    queued = observe_event(event=event, enqueue=lambda a: None)
    erase_subject(tenant=demo, user_id=DANA, reason="her request", requested_by="t")

    done = run_invalidation(queued.pk, jev=make_jev(standin.url))

    assert done.state == "failed" and "was erased" in done.error
    assert standin.system_one_count == 0


def test_an_erasure_needs_a_user_and_a_reason_and_writes_nothing_without(demo):
    for user_id, reason in (("", "why"), (DANA, "  ")):
        with pytest.raises(ErasureRefused):
            erase_subject(tenant=demo, user_id=user_id, reason=reason, requested_by="t")
    assert not Erasure.objects.exists()


def test_the_command_erases_and_prints_the_proof(demo, capsys):
    Tenant.objects.filter(pk=demo.pk).update(two_person_rule=False)  # the demo's acme keeps it
    call_command("erase_subject", tenant="acme", user_id=DANA, reason="her request")
    out = capsys.readouterr().out
    erasure = Erasure.objects.get()
    assert f"erasure {erasure.pk} for user {DANA} in acme" in out and erasure.proof_hash in out


def test_where_the_two_person_rule_holds_the_command_needs_two_leads(demo):
    Tenant.objects.filter(pk=demo.pk).update(two_person_rule=True)
    make_user("acme-lead-2", demo, "lead")

    with pytest.raises(CommandError, match="two-person rule"):
        call_command("erase_subject", tenant="acme", user_id=DANA, reason="x", requested_by="acme-lead")
    with pytest.raises(CommandError, match="'acme-reviewer' is not a lead or admin"):
        call_command("erase_subject", tenant="acme", user_id=DANA, reason="x", requested_by="acme-lead",
                     confirmed_by="acme-reviewer")  # fmt: skip
    call_command("erase_subject", tenant="acme", user_id=DANA, reason="x", requested_by="acme-lead",
                 confirmed_by="acme-lead-2")  # fmt: skip

    erasure = Erasure.objects.get()
    assert erasure.requested_by.startswith("user:") and erasure.confirmed_by != erasure.requested_by


def test_no_audit_reason_in_the_demo_quotes_a_memory_or_an_event(demo):
    """Audit rows cannot be erased, so they must never hold what an erasure has to remove."""
    texts = [
        *Memory.objects.exclude(content=ERASED).values_list("content", flat=True),
        *SourceEvent.objects.exclude(text=ERASED).values_list("text", flat=True),
    ]
    reasons = list(Transition.objects.values_list("reason", flat=True))
    assert len(texts) > 150 and len(reasons) > 90
    quoted = [text[:50] for text in texts for reason in reasons if text in reason]
    assert quoted == []
