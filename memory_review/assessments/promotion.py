"""Promotion, in shadow mode (DESIGN §4, seeds/000): before a proposed memory becomes durable,
code checks it, Jev votes (supported, scope_fits, conflict), and the policy's decision is only
recorded. A reviewer decides; where they differ from the policy, that is a disagreement."""

import logging

from django.db import OperationalError, transaction
from django.utils import timezone

from memory_review.lifecycle import Actor, LifecycleError, transition
from memory_review.memories.models import LIVE_STATUSES, Memory, SourceEvent, content_hash, exact_scope
from memory_review.memories.services import clean_scope, memory_write, require_kind
from memory_review.tenancy.models import Tenant

from . import questions as q
from .dispatch import enqueue_on_commit
from .jev import Jev, JevError, get_jev, noul
from .leases import FINISHED, claim, finish, heartbeat, release
from .models import Assessment, PolicyVersion, PromotionCandidate
from .policy import Thresholds, decide_promotion
from .usage import Usage, ask_one

DECISION_OF_ACTION = {
    "approve": PromotionCandidate.Decision.PROMOTE,
    "reject": PromotionCandidate.Decision.REJECT,
}

logger = logging.getLogger(__name__)


@transaction.atomic
def candidate_propose(
    *,
    tenant: Tenant,
    claim: str,
    kind: str,
    subject: str,
    source_event: SourceEvent | None,
    proposed_by: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    thread_id: str | None = None,
    enqueue=None,
) -> PromotionCandidate:
    """Record a proposed memory; code checks settle it without a call where they can."""
    if not claim or not claim.strip():
        raise ValueError("a candidate needs a claim")
    require_kind(kind)
    candidate = PromotionCandidate(
        tenant=tenant,
        claim=claim,
        claim_hash=content_hash(claim),
        kind=kind,
        subject=subject.strip(),
        source_event=source_event,
        source_hash=source_event.text_hash if source_event else None,
        proposed_by=proposed_by,
        user_id=clean_scope(user_id),
        agent_id=clean_scope(agent_id),
        thread_id=clean_scope(thread_id),
    )
    failed = _code_check(candidate)
    if failed:
        candidate.check_failed, reason = failed
        candidate.save()
        transition(
            obj=candidate,
            action="reject",
            actor=Actor.system("promotion-checks"),
            reason=reason,
            seen_version=1,
        )
        return candidate
    candidate.assessment = Assessment.objects.create(
        tenant=tenant,
        purpose=Assessment.Purpose.PROMOTION,
        event=source_event,
        policy=PolicyVersion.objects.for_tenant(tenant).active(),
        question_set_version=q.PROMOTION_VERSION,
    )
    candidate.save()
    enqueue_on_commit(candidate.assessment, enqueue)
    return candidate


def _code_check(candidate: PromotionCandidate) -> tuple[str, str] | None:
    source = candidate.source_event
    if source is None or source.erased_at is not None:
        return "missing_source", "rejected by code: the claim has no source event to check it against"
    duplicate = (
        Memory.objects.for_tenant(candidate.tenant)
        .filter(content_hash=candidate.claim_hash, status__in=LIVE_STATUSES, deleted_at__isnull=True)
        .filter(exact_scope(candidate))
        .first()
    )
    if duplicate is not None:
        return "duplicate", f"rejected by code: memory {duplicate.pk} already says exactly this in this scope"
    return None


def promotion_state(candidate: PromotionCandidate) -> dict:
    """What Jev reads: the claim, its source, and the rules and facts it could conflict with.
    No ids, no timestamps."""
    in_scope = (
        Memory.objects.for_tenant(candidate.tenant)
        .live()
        .for_scope(user_id=candidate.user_id, agent_id=candidate.agent_id, thread_id=candidate.thread_id)
    )
    guidelines = list(in_scope.filter(kind=Memory.Kind.POLICY).values_list("content", flat=True)[:20])
    existing = list(in_scope.filter(subject=candidate.subject).values_list("content", flat=True)[:20])
    return {
        "candidate": {"claim": candidate.claim, "kind": candidate.kind, "scope": candidate.scope_label},
        "source": {"text": candidate.source_event.text, "channel": candidate.source_event.source},
        "guidelines": guidelines,
        "existing": existing,
    }


def run_promotion(
    assessment_id: int,
    *,
    tenant_id: int | None = None,
    jev: Jev | None = None,
    claimed: Assessment | None = None,
) -> Assessment:
    """Ask the three questions and record the policy's decision; nothing is promoted (shadow
    mode). Leased like an invalidation: no transaction is open while Jev answers (`claimed`: as
    run_invalidation's)."""
    if tenant_id is None:
        tenant_id = Assessment.objects.values_list("tenant_id", flat=True).get(pk=assessment_id)
    assessment = claimed or claim(tenant_id=tenant_id, assessment_id=assessment_id)
    if assessment.state in FINISHED:
        return assessment
    try:
        return _judge_candidate(assessment, jev)
    except OperationalError:
        release(assessment)  # transient: the task retries and may take it straight back
        raise
    except Exception as exc:  # anything else would leave it "running" until the reaper gave up
        logger.exception("assessment %s failed", assessment.pk)
        assessment.refresh_from_db()
        return finish(assessment, error=f"{type(exc).__name__}: {exc}")


def _judge_candidate(assessment: Assessment, jev: Jev | None) -> Assessment:
    candidate = PromotionCandidate.objects.select_related("source_event", "tenant").get(assessment=assessment)
    if candidate.source_event is None or candidate.source_event.erased_at is not None:
        # Erased while queued: its text is gone, and never goes to Jev.
        return finish(
            assessment, error="the candidate's source event was erased (right to forget) before it was judged"
        )
    usage = Usage()
    with heartbeat(assessment):
        try:
            votes = ask_one(jev or get_jev(), promotion_state(candidate), PROMOTION_QUESTIONS, usage)
        except JevError as exc:
            votes, error = None, str(exc)
        else:
            error = None
    figures = {**usage.fields(), "judged_at": None if error else timezone.now()}
    with transaction.atomic():
        Assessment.objects.filter(pk=assessment.pk).update(**figures)
        for name, value in figures.items():
            setattr(assessment, name, value)
        if votes is not None:
            decision = decide_promotion(votes, policy=Thresholds.from_data(assessment.policy.thresholds))
            PromotionCandidate.objects.filter(pk=candidate.pk).update(
                supported=votes["supported"],
                scope_fits=votes["scope_fits"],
                conflict=votes["conflict"],
                policy_decision=decision,
            )
    return finish(assessment, error=error)


PROMOTION_QUESTIONS = {t.id: noul(t.id, t.instructions, t.yes, t.no) for t in q.PROMOTION_QUESTIONS}


@transaction.atomic
def candidate_decide(
    *,
    candidate: PromotionCandidate,
    action: str,
    actor: Actor,
    reason: str,
    seen_version: int,
    request_id=None,
) -> PromotionCandidate:
    """A reviewer approves (the memory and its source link are written in the same transaction,
    after re-checking that the source has not changed) or rejects a candidate."""
    if action not in DECISION_OF_ACTION:
        raise LifecycleError(f"unknown decision {action!r}; expected approve or reject")
    candidate = PromotionCandidate.objects.select_related("source_event", "assessment").get(pk=candidate.pk)
    if candidate.assessment is not None and candidate.assessment.state != Assessment.State.DONE:
        # Deciding before the votes are in would record no disagreement where there may be one.
        raise LifecycleError(
            f"candidate {candidate.pk} is still being assessed; decide when its votes are in"
        )
    decision = DECISION_OF_ACTION[action]
    disagreement = (
        candidate.policy_decision in ("promote", "reject") and candidate.policy_decision != decision
    )
    note = f" (the policy said {candidate.policy_decision}: disagreement)" if disagreement else ""
    transition(
        obj=candidate,
        action=action,
        actor=actor,
        reason=reason + note,
        seen_version=seen_version,
        request_id=request_id,
    )
    memory = None
    if action == "approve":
        source = candidate.source_event
        if source is None or source.erased_at is not None or source.text_hash != candidate.source_hash:
            raise LifecycleError(
                "the candidate's source changed since it was proposed: it needs a fresh assessment"
            )
        memory = memory_write(
            event=source,
            kind=candidate.kind,
            subject=candidate.subject,
            content=candidate.claim,
            written_by=candidate.proposed_by,
            user_id=candidate.user_id,
            agent_id=candidate.agent_id,
            thread_id=candidate.thread_id,
        )
    PromotionCandidate.objects.filter(pk=candidate.pk).update(
        reviewer_decision=decision, reviewed_by=str(actor), disagreement=disagreement, memory=memory
    )
    candidate.refresh_from_db()
    return candidate
