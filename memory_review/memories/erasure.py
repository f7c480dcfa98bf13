"""The right to forget, with proof (issue 7, DESIGN §2): one transaction erases a person's
events, every memory scoped to them or written from their events, the promotion candidates that
cite either, and the labelers' notes on their votes. Rows stay, as `deleted` or `[erased]`, with
their audit trail: every memory change is a transition by `system:erasure`, whose reason cites the
erasure and never the content. The Erasure row keeps the counts and a proof hash over the erased
rows' ids and prior content hashes (never the content), for auditors."""

import hashlib

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory_review.assessments.models import CandidateStatus, PromotionCandidate
from memory_review.calibration.models import Label
from memory_review.lifecycle import Actor, LifecycleError, permits, transition
from memory_review.tenancy.models import Tenant

from .models import Erasure, Memory, SourceEvent, content_hash
from .services import ERASED, clean_scope

ERASER = Actor.system("erasure")


class ErasureRefused(LifecycleError):
    pass


@transaction.atomic
def erase_subject(
    *, tenant: Tenant, user_id: str, reason: str, requested_by: str, confirmed_by: str | None = None
) -> Erasure:
    """Erase everything of `user_id` in `tenant`, or nothing (one transaction)."""
    user_id = clean_scope(user_id)
    if not user_id:
        raise ErasureRefused("an erasure needs the user id whose data is to be erased")
    if not reason or not reason.strip():
        raise ErasureRefused("an erasure needs a reason (kept with its proof)")
    now = timezone.now()
    erasure = Erasure.objects.create(
        tenant=tenant,
        user_id=user_id,
        requested_by=requested_by,
        confirmed_by=confirmed_by,
        reason=reason.strip(),
    )
    events = list(
        SourceEvent.objects.for_tenant(tenant).filter(user_id=user_id).select_for_update().order_by("pk")
    )
    memories = list(
        Memory.objects.for_tenant(tenant)
        .filter(Q(user_id=user_id) | Q(source_event__user_id=user_id))
        .order_by("pk")
    )
    candidates = list(
        PromotionCandidate.objects.for_tenant(tenant)
        .filter(
            Q(user_id=user_id) | Q(source_event__user_id=user_id) | Q(memory__in=[m.pk for m in memories])
        )
        .order_by("pk")
    )
    proof = [f"event:{e.pk}:{e.text_hash}" for e in events]
    proof += [f"memory:{m.pk}:{m.content_hash}" for m in memories]
    proof += [f"candidate:{c.pk}:{c.claim_hash}" for c in candidates]

    why = f"right-to-forget erasure {erasure.pk} for user {user_id}"  # never the content
    for memory in memories:
        if permits(memory, "system", "erase"):
            transition(obj=memory, action="erase", actor=ERASER, reason=why, seen_version=memory.row_version)
    Memory.objects.filter(pk__in=[m.pk for m in memories]).update(
        content=ERASED, subject=ERASED, content_hash=content_hash(ERASED), deleted_at=now
    )
    for candidate in candidates:
        if candidate.status in (CandidateStatus.PROPOSED, CandidateStatus.NEEDS_REVIEW):
            transition(
                obj=candidate, action="erase", actor=ERASER, reason=why, seen_version=candidate.row_version
            )
    PromotionCandidate.objects.filter(pk__in=[c.pk for c in candidates]).update(
        claim=ERASED, subject=ERASED, claim_hash=content_hash(ERASED)
    )
    SourceEvent.objects.filter(pk__in=[e.pk for e in events]).update(
        text=ERASED, text_hash=content_hash(ERASED), erased_at=now
    )
    labels = Label.objects.for_tenant(tenant).filter(
        Q(verdict__memory__in=[m.pk for m in memories]) | Q(candidate__in=[c.pk for c in candidates]),
        note__isnull=False,
    )
    erasure.labels_cleared = labels.update(note=None)
    erasure.memories_erased, erasure.events_erased, erasure.candidates_erased = (
        len(memories),
        len(events),
        len(candidates),
    )
    erasure.proof_hash = hashlib.sha256("\n".join(sorted(proof)).encode()).hexdigest()
    erasure.completed_at = now
    erasure.save()
    return erasure
