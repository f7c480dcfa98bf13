"""Right to forget, with proof: a person's data is gone from every table, the rows and the audit
trail stay, the proof remains, and nothing can bring the data back."""

import hashlib
import json
import logging

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import models
from django.db.models import Q

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.assessments.models import PromotionCandidate
from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.compliance.erasure import ErasureRefused, erase_subject
from memory_review.memories.models import Erasure, Memory, SourceEvent
from memory_review.memories.services import ERASED, event_record
from memory_review.tenancy.models import Tenant
from tests.demo_data import seed_demo
from tests.factories import make_jev

pytestmark = pytest.mark.django_db
DANA = "cust-4821"


@pytest.fixture
def demo():
    seed_demo()
    return Tenant.objects.get(slug="acme")


def erase_her(tenant, reason: str = "her request") -> Erasure:
    """As the demo's acme does it: its lead asks, its admin confirms (the two-person rule)."""
    from django.contrib.auth import get_user_model

    from memory_review.compliance import dual_control

    people = get_user_model().objects
    asked = dual_control.request_erasure(
        tenant=tenant, user_id=DANA, reason=reason, by=people.get(username="acme-lead")
    )
    return dual_control.confirm(request=asked, by=people.get(username="admin")).erasure


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

    erasure = erase_her(demo, reason="her written request, ticket 90211")

    found = [
        (model._meta.label, column, phrase[:40])
        for model, column in every_text_column()
        for phrase in phrases
        if model.objects.filter(**{f"{column}__contains": phrase}).exists()
    ]
    assert found == []
    assert not [phrase for phrase in phrases if phrase in caplog.text]
    assert (erasure.events_erased, erasure.memories_erased) >= (4, 5)
    assert verification.problem_in(demo) is None


def test_her_rows_stay_deleted_with_their_trail_and_the_proof_can_be_recomputed(demo):
    hers = Q(user_id=DANA) | Q(source_event__user_id=DANA)
    before = dict(Memory.objects.for_tenant(demo).filter(hers).values_list("pk", "content_hash"))
    events = dict(SourceEvent.objects.for_tenant(demo).filter(user_id=DANA).values_list("pk", "text_hash"))
    candidates = dict(
        PromotionCandidate.objects.for_tenant(demo)
        .filter(hers | Q(memory__in=before))
        .values_list("pk", "claim_hash")
    )

    erasure = erase_her(demo)

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

    erase_her(demo)

    assert dict(Memory.objects.filter(pk__in=others).values_list("pk", "content")) == others
    assert verification.problem_in(globex) is None


def test_nothing_can_bring_her_data_back_through_the_api(demo, client):
    from memory_review.tenancy.tokens import token_create

    event = SourceEvent.objects.for_tenant(demo).filter(user_id=DANA).first()
    erase_her(demo)
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
    erase_her(demo)

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


def test_where_the_two_person_rule_holds_the_command_only_asks_and_a_lead_confirms_in_the_app(demo, capsys):
    from memory_review.memories.models import DualControl

    Tenant.objects.filter(pk=demo.pk).update(two_person_rule=True)
    with pytest.raises(CommandError, match="--confirmed-by is not taken: a second lead or admin confirms"):
        call_command("erase_subject", tenant="acme", user_id=DANA, reason="x", requested_by="acme-lead",
                     confirmed_by="admin")  # fmt: skip
    with pytest.raises(CommandError, match="'acme-reviewer' is not a lead or admin"):
        call_command("erase_subject", tenant="acme", user_id=DANA, reason="x", requested_by="acme-reviewer")

    call_command("erase_subject", tenant="acme", user_id=DANA, reason="her request", requested_by="acme-lead")

    assert not Erasure.objects.exists()
    request = DualControl.objects.get(kind="erase")
    assert f"erasure of {DANA} asked (request {request.pk})" in capsys.readouterr().out
    assert (request.requested_by.username, request.decided_by, request.outcome) == ("acme-lead", None, None)


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


def test_an_erasure_reaches_every_copy_of_her_words_and_the_proof_still_verifies(demo, client):
    """Issue 14, item 4: her words copied into a replay set, label notes, typed reasons, a claim's
    note, a proposal, the admin log and a request id are all gone after the erasure, from every
    text column of every table and from the audit export made afterwards."""
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType
    from django.core.files.uploadedfile import SimpleUploadedFile

    from memory_review.assessments.models import Verdict
    from memory_review.calibration import adoption, labeling
    from memory_review.calibration.models import Label, ReplaySet
    from memory_review.compliance.erasure import quotes
    from memory_review.workflow import claims, decisions

    users = get_user_model().objects
    lead, labeler = users.get(username="acme-lead"), users.get(username="acme-labeler")
    phrases = her_phrases(demo)
    fragments = [q for q in quotes(phrases) if q not in phrases]  # sentences and clauses of hers
    assert len(fragments) >= 12
    others = Memory.objects.for_tenant(demo).exclude(user_id=DANA).exclude(source_event__user_id=DANA)
    hers = Memory.objects.for_tenant(demo).filter(user_id=DANA, status="active").first()
    her_event = SourceEvent.objects.for_tenant(demo).filter(user_id=DANA).first()

    # An imported replay set: 12 cases quote her, two quote no one and must survive word for word.
    votes = dict(bears=0.9, still_true=0.2, replaces=0.8, partial=0.1, hypothetical=0.0, directive=0.0)
    cases = [
        {
            "id": f"dana-{n}",
            "votes": votes,
            "expected": "superseded",
            "event": fragment,
            "memory": "Customer asked about a refund.",
            "note": f"from ticket: {fragment}",
        }
        for n, fragment in enumerate(fragments[:12])
    ] + [
        {"id": "kept-1", "votes": votes, "expected": "superseded", "event": "Warehouse moved to Leeds."},
        {"id": "kept-2", "votes": votes, "expected": "confirmed", "note": "Nobody's words here at all."},
    ]
    upload = SimpleUploadedFile("from-zendesk.jsonl", "\n".join(json.dumps(c) for c in cases).encode())
    client.force_login(lead)
    assert client.post("/t/acme/calibration/import/", {"file": upload}).status_code == 302
    replay_set = ReplaySet.objects.get()

    # A vote pairing her event with someone else's memory, labeled with a note that does not quote
    # her; and a label on another vote whose note does.
    stranger = others.filter(status="active").first()
    paired = Verdict.objects.create(
        tenant=demo,
        assessment=Verdict.objects.filter(tenant=demo).first().assessment,
        memory=stranger,
        event=her_event,
        row_version=stranger.row_version,
        disposition="unrelated",
        still_true=0.9,
        bears=0.1,
        replaces=0.0,
        partial=0.0,
        hypothetical=0.0,
        directive=0.0,
    )
    labeling.record(
        demo,
        labeler,
        labeling.ItemRef("verdict", paired.pk),
        outcome="unrelated",
        note="She sounded upset on the phone about this.",
    )
    not_hers = Verdict.objects.for_tenant(demo).exclude(event__user_id=DANA).exclude(memory__user_id=DANA)
    not_hers = not_hers.exclude(memory__source_event__user_id=DANA).exclude(
        pk__in=Label.objects.values("verdict")
    )
    elsewhere, nobodys = not_hers[:2]
    quoting_label = labeling.record(
        demo,
        labeler,
        labeling.ItemRef("verdict", elsewhere.pk),
        outcome=elsewhere.disposition,
        note=f"Like '{fragments[0]}'",
    )
    kept_label = Label.objects.create(
        tenant=demo,
        labeler=labeler,
        verdict=nobodys,
        outcome="confirmed",
        note="A note about nobody.",
    )

    # Reasons typed about her memory, and about someone else's memory quoting her.
    decisions.memory_decide(
        memory=hers,
        action="freeze",
        user=lead,
        can_lead=True,
        request_id="req-dana-7",
        reason=f"Customer wrote: {fragments[1]}",
        seen_version=hers.row_version,
    )
    decisions.memory_decide(
        memory=stranger,
        action="freeze",
        user=lead,
        can_lead=True,
        reason=f"Same as the other ticket ({fragments[2]})",
        seen_version=stranger.row_version,
    )
    queued = Memory.objects.for_tenant(demo).filter(user_id=DANA, status="active").exclude(pk=hers.pk).first()
    decisions.memory_decide(
        memory=queued,
        action="flag",
        user=lead,
        can_lead=True,
        reason="check",
        seen_version=queued.row_version,
    )
    claims.claim_take(memory=queued, user=lead)
    claims.claim_release(memory=queued, by=lead, note=fragments[3][:200], can_lead=True)
    thresholds = labeling.active_policy(demo)[1]
    proposal = adoption.propose(
        demo,
        lead,
        thresholds=thresholds,
        mode="shadow",
        reason=f"Cases like {fragments[4]!r} should go to review.",
        evidence={},
    )
    LogEntry.objects.create(
        user=users.get(username="admin"),
        content_type=ContentType.objects.get_for_model(Memory),
        object_id=str(hers.pk),
        object_repr=hers.content[:200],
        action_flag=CHANGE,
        change_message=json.dumps([{"changed": {"fields": ["Content"]}}]),
    )
    assert verification.problem_in(demo) is None

    erasure = erase_her(demo, reason="her written request")

    everything = phrases | set(fragments[:12])
    everything |= {json.dumps(text)[1:-1] for text in everything}  # as JSON would hold them
    everything = sorted(everything, key=len)
    found = [
        (model._meta.label, column, phrase[:40])
        for model, column in every_text_column()
        for phrase in everything
        if model.objects.filter(**{f"{column}__contains": phrase}).exists()
    ]
    assert found == []
    client.force_login(users.get(username="acme-auditor"))
    exported = b"".join(client.get("/t/acme/audit/export.csv").streaming_content).decode()
    assert [p for p in everything if p in exported] == []
    assert verification.problem_in(demo) is None

    # What was not hers stays, and the blanking is on the record.
    replay_set.refresh_from_db()
    kept = [json.loads(line) for line in replay_set.content.splitlines()]
    assert kept[-2:] == cases[-2:] and all(case["event"] == ERASED for case in kept[:12])
    assert Label.objects.get(pk=kept_label.pk).note == "A note about nobody."
    assert Label.objects.get(verdict=paired).note is None
    assert Label.objects.get(pk=quoting_label.pk).note is None
    proposal.refresh_from_db()
    assert proposal.reason == ERASED
    stranger_move = Transition.objects.filter(memory=stranger).latest("seq")
    assert (stranger_move.reason, stranger_move.erased_by) == (ERASED, erasure.pk)
    her_move = Transition.objects.filter(memory=hers, action="freeze").get()
    assert (her_move.reason, her_move.request_id, her_move.erased_by) == (ERASED, None, erasure.pk)
    assert LogEntry.objects.get(object_id=str(hers.pk)).object_repr == ERASED


def test_a_forgotten_memorys_page_shows_neither_its_words_nor_its_source(demo, client):
    from django.contrib.auth import get_user_model

    from memory_review.workflow import decisions

    Tenant.objects.filter(pk=demo.pk).update(two_person_rule=False)  # one lead forgets alone here
    lead = get_user_model().objects.get(username="acme-lead")
    memory = Memory.objects.for_tenant(demo).filter(status="active").exclude(source_event=None).first()
    words, source = memory.content, memory.source_event.text
    decisions.memory_decide(
        memory=memory,
        action="forget",
        user=lead,
        can_lead=True,
        reason="asked to forget",
        seen_version=memory.row_version,
    )
    client.force_login(lead)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    assert "the memory was forgotten" in page
    assert words not in page and source not in page


def test_notes_typed_on_her_memories_are_blanked_whole_and_others_kept(demo):
    """A lead's release note on a claim of her memory, and the reason a lead gave for asking to
    forget it, name her in words no span search can know: on her memories they go whole
    (personal_data.ON_THEIR_MEMORIES); on anyone else's they stay."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from memory_review.compliance import dual_control
    from memory_review.memories.models import DualControl
    from memory_review.workflow.models import Claim

    lead = get_user_model().objects.get(username="acme-lead")
    hers = Memory.objects.for_tenant(demo).filter(user_id=DANA, status="active").first()
    other = Memory.objects.for_tenant(demo).exclude(user_id=DANA).filter(status="active").first()
    now = timezone.now()
    for memory, note in ((hers, "left for the lead who spoke to her"), (other, "left for Sam")):
        Claim.objects.create(
            tenant=demo, memory=memory, holder=lead, claimed_at=now, expires_at=now + timedelta(minutes=5),
            released_at=now, released_by=lead, release_note=note,
        )  # fmt: skip
    asked = dual_control.request_forget(
        memory=hers, reason="she rang from her sister's flat", seen_version=hers.row_version, by=lead
    )

    erase_her(demo)

    assert Claim.objects.get(memory=hers).release_note == ERASED
    assert Claim.objects.get(memory=other).release_note == "left for Sam"
    assert DualControl.objects.get(pk=asked.pk).reason == ERASED
