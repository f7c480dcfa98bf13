"""Issue 27, item 5: erasure reaches every copy by rule. Every text and JSON column is declared in
compliance/personal_data.py (the person's own words, a scope id, typed text, or no personal data),
and an erasure follows the declaration: typed text on her rows and anywhere that quotes her
(an agent's "agent for <name>", a token's name, an endpoint's description, a rule's subject words,
a job's filters, reasons), a quote of her inside another customer's event as a span, her scope
ids as keyed pseudonyms. The tenant still verifies."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from memory_review.agents import webhooks
from memory_review.assessments.models import PromotionCandidate
from memory_review.audit import verification
from memory_review.compliance import personal_data
from memory_review.compliance.erasure import quotes
from memory_review.jobfiles.models import JobFile, JobState
from memory_review.memories.models import Memory, SourceEvent
from memory_review.memories.services import ERASED, event_record
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.tokens import token_create
from memory_review.workflow.assignment import rule_create
from tests.demo_data import seed_demo
from tests.test_erasure import DANA, erase_her, every_text_column, her_phrases

pytestmark = pytest.mark.django_db


def test_every_text_and_json_column_is_declared_and_every_declaration_names_one():
    found = set(personal_data.text_columns())
    declared = {(label, column) for label, columns in personal_data.COLUMNS.items() for column in columns}

    assert sorted(found - declared) == [], "declare these in compliance/personal_data.py"
    assert sorted(declared - found) == [], "these declared columns are no longer text or JSON"


@pytest.fixture
def demo(settings):
    settings.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.1:8766"]
    seed_demo()
    return Tenant.objects.get(slug="acme")


def test_an_erasure_reaches_every_declared_copy_and_the_tenant_still_verifies(demo):
    users = get_user_model().objects
    lead = users.get(username="acme-lead")
    fragments = [q for q in quotes(her_phrases(demo)) if len(q) <= 60]
    quote = fragments[0]
    hers = Memory.objects.for_tenant(demo).filter(user_id=DANA).order_by("pk")
    her_events = SourceEvent.objects.for_tenant(demo).filter(user_id=DANA).order_by("pk")

    # Her scope ids, as the agents set them; two of her rows share a thread.
    her_events.update(agent_id="agent-dana-care", thread_id="thread-dana-refund", run_id="run-77")
    hers.update(
        agent_id="agent-dana-care", thread_id="thread-dana-refund", written_by="agent for Dana Whitfield"
    )
    candidate = PromotionCandidate.objects.for_tenant(demo).filter(user_id=DANA).first()
    if candidate is not None:
        PromotionCandidate.objects.filter(pk=candidate.pk).update(proposed_by="agent for Dana Whitfield")
    # Typed text elsewhere that quotes her.
    token, _ = token_create(tenant=demo, name=f"bot for {quote}"[:80])
    endpoint, _ = webhooks.endpoint_create(
        demo, url="http://127.0.0.1:8766/hooks", description=f"re {quote}"[:120], by=f"user:{lead.pk}"
    )
    rule = rule_create(tenant=demo, to=users.get(username="acme-reviewer"), by=lead, subject=quote)
    pending = JobFile.objects.create(
        tenant=demo, kind="audit-trail", params={"subject": quote, "kind": "fact"}, filename="trail.csv",
        requested_by=f"user:{lead.pk}",
    )  # fmt: skip
    done = JobFile.objects.create(
        tenant=demo, kind="audit-trail", params={}, filename="old.csv", requested_by=f"user:{lead.pk}",
        state=JobState.DONE, expires_at=timezone.now() + timezone.timedelta(hours=20),
    )  # fmt: skip
    # Another customer's event quoting her sentence: only the quote goes.
    forwarded = event_record(
        tenant=demo,
        source="email",
        user_id="cust-9001",
        text=f"My neighbour wrote: {quote}. I want the same deal.",
    )
    assert verification.problem_in(demo) is None

    erase_her(demo)  # as acme does it: its lead asks, its admin confirms

    demo.refresh_from_db()
    assert verification.problem_in(demo) is None
    assert set(hers.values_list("written_by", flat=True)) == {ERASED}
    if candidate is not None:
        candidate.refresh_from_db()
        assert candidate.proposed_by == ERASED
    token.refresh_from_db(), endpoint.refresh_from_db(), rule.refresh_from_db(), pending.refresh_from_db()
    assert (token.name, endpoint.description, rule.subject_contains) == (ERASED, ERASED, ERASED)
    assert pending.params == {"subject": ERASED, "kind": "fact"}
    done.refresh_from_db()
    assert done.expires_at <= timezone.now()  # an export written before may hold her words
    forwarded.refresh_from_db()
    assert (
        forwarded.text.startswith(f"My neighbour wrote: {ERASED}")
        and "I want the same deal" in forwarded.text
    )
    assert quote not in forwarded.text and forwarded.text_hash != ERASED
    # Her scope ids are keyed pseudonyms, the same id the same pseudonym, and gone from every row.
    pseudonyms = set(her_events.values_list("thread_id", flat=True)) | set(
        hers.values_list("thread_id", flat=True)
    )
    assert len(pseudonyms) == 1 and next(iter(pseudonyms)).startswith("erased-")
    for clear in ("agent-dana-care", "thread-dana-refund", "run-77", "agent for Dana Whitfield"):
        left = [
            f"{model.__name__}.{column}"
            for model, column in every_text_column()
            if model._base_manager.filter(**{column: clear}).exists()
        ]
        assert left == [], clear
    left = [
        f"{model.__name__}.{column}"
        for model, column in every_text_column()
        if model._base_manager.filter(**{f"{column}__contains": quote}).exists()
    ]
    assert left == []
