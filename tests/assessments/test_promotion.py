"""Promotion in shadow mode: code checks first, three votes, the policy's decision recorded, a
reviewer decides."""

import pytest

from memory_review.assessments.promotion import candidate_decide, candidate_propose, run_promotion
from memory_review.assessments.standin import StandinConfig
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, LifecycleError
from memory_review.memories.models import Memory, SourceEvent
from memory_review.memories.services import event_record
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

APPROVAL = "Approved a one-time refund for order 1182 after the 30-day window, as an exception."


def propose(tenant, claim: str, *, source: SourceEvent | None, **scope):
    return candidate_propose(
        tenant=tenant,
        claim=claim,
        kind="exception",
        subject="refund order 1182",
        source_event=source,
        proposed_by="agent:support-bot",
        enqueue=lambda a: None,
        **scope,
    )


@pytest.fixture
def approval(acme):
    return event_record(tenant=acme, source="ticket", text=APPROVAL, user_id="cust-1")


def test_a_claim_without_a_source_is_rejected_by_code_without_a_call(acme, policy, standin):
    candidate = propose(acme, "This customer gets refunds after the window.", source=None)

    assert (candidate.status, candidate.check_failed, candidate.assessment_id) == (
        "rejected",
        "missing_source",
        None,
    )
    assert Transition.objects.get(candidate=candidate).actor == "system:promotion-checks"
    assert standin.system_one_count == 0


def test_an_exact_duplicate_in_the_same_scope_is_rejected_by_code(acme, policy, approval, standin):
    make_memory(acme, subject="refund", content="Order 1182 got a one-time refund.", user_id="cust-1")

    candidate = propose(acme, "Order 1182 got a one-time refund.", source=approval, user_id="cust-1")
    elsewhere = propose(acme, "Order 1182 got a one-time refund.", source=approval, user_id="cust-2")

    assert (candidate.status, candidate.check_failed) == ("rejected", "duplicate")
    assert elsewhere.status == "proposed"
    assert standin.system_one_count == 0


def test_the_policy_decision_is_recorded_and_nothing_is_promoted_in_shadow_mode(acme, policy, approval, jev):
    narrow = propose(
        acme, "Order 1182 got a one-time refund as an exception.", source=approval, user_id="cust-1"
    )
    broad = propose(acme, "This customer is always eligible for refunds after the window.", source=approval)

    for candidate in (narrow, broad):
        assert run_promotion(candidate.assessment_id, jev=jev).state == "done"
        candidate.refresh_from_db()
        assert None not in (candidate.supported, candidate.scope_fits, candidate.conflict)
        assert candidate.status == "proposed" and candidate.memory is None

    assert narrow.policy_decision == "promote"
    assert broad.policy_decision == "reject"
    assert not Memory.objects.filter(content__startswith="This customer is always").exists()


def test_approval_writes_the_memory_with_its_source_and_marks_a_disagreement(
    acme, policy, approval, jev, lead
):
    broad = propose(acme, "This customer is always eligible for refunds after the window.", source=approval)
    run_promotion(broad.assessment_id, jev=jev)
    broad.refresh_from_db()

    decided = candidate_decide(
        candidate=broad, action="approve", actor=Actor.user(lead), reason="lead knows better", seen_version=1
    )

    memory = decided.memory
    assert (memory.content, memory.source_event_id, memory.written_by) == (
        broad.claim,
        approval.pk,
        "agent:support-bot",
    )
    assert (decided.status, decided.reviewer_decision, decided.disagreement) == ("approved", "promote", True)
    assert "disagreement" in Transition.objects.get(candidate=broad).reason


def test_approval_is_refused_when_the_source_changed_and_nothing_is_written(
    acme, policy, approval, jev, lead
):
    candidate = propose(acme, "Order 1182 got a one-time refund as an exception.", source=approval)
    run_promotion(candidate.assessment_id, jev=jev)
    SourceEvent.objects.filter(pk=approval.pk).update(text_hash="0" * 64)
    memories = Memory.objects.count()

    with pytest.raises(LifecycleError, match="source changed"):
        candidate_decide(
            candidate=candidate, action="approve", actor=Actor.user(lead), reason="ok", seen_version=1
        )

    candidate.refresh_from_db()
    assert (candidate.status, candidate.memory_id) == ("proposed", None)
    assert Memory.objects.count() == memories
    assert not Transition.objects.filter(candidate=candidate).exists()


def test_rejection_agreeing_with_the_policy_is_no_disagreement(acme, policy, approval, jev, lead):
    broad = propose(acme, "This customer is always eligible for refunds after the window.", source=approval)
    run_promotion(broad.assessment_id, jev=jev)

    decided = candidate_decide(
        candidate=broad, action="reject", actor=Actor.user(lead), reason="too broad", seen_version=1
    )

    assert (decided.status, decided.reviewer_decision, decided.disagreement) == ("rejected", "reject", False)


@pytest.mark.parametrize("standin_config", [StandinConfig(rate_500=1.0)])
def test_a_failed_promotion_assessment_records_no_votes(acme, policy, approval, standin):
    from tests.factories import make_jev

    candidate = propose(acme, "Order 1182 got a one-time refund.", source=approval)

    failed = run_promotion(candidate.assessment_id, jev=make_jev(standin.url, max_tries=2))

    candidate.refresh_from_db()
    assert failed.state == "failed" and "HTTP 500" in failed.error
    assert (candidate.supported, candidate.policy_decision, candidate.status) == (None, None, "proposed")


def test_a_decision_waits_for_the_votes(acme, policy, approval, lead):
    candidate = propose(acme, "Order 1182 got a one-time refund as an exception.", source=approval)

    with pytest.raises(LifecycleError, match="still being assessed"):
        candidate_decide(
            candidate=candidate, action="reject", actor=Actor.user(lead), reason="no", seen_version=1
        )

    candidate.refresh_from_db()
    assert (candidate.status, candidate.reviewer_decision) == ("proposed", None)
    assert not Transition.objects.filter(candidate=candidate).exists()


def test_a_jev_reply_missing_an_answer_fails_the_assessment(acme, policy, approval, jev):
    """The SDK drops answers it cannot type; a partial reply must not pass for votes."""
    candidate = propose(acme, "Order 1182 got a one-time refund.", source=approval)
    answer = jev.client.system_one

    def without_conflict(**request):
        response = answer(**request)
        response.answers.pop("conflict")
        return response

    jev.client.system_one = without_conflict
    failed = run_promotion(candidate.assessment_id, jev=jev)

    candidate.refresh_from_db()
    assert failed.state == "failed" and "no yes/no answer for conflict" in failed.error
    assert (candidate.supported, candidate.policy_decision) == (None, None)
