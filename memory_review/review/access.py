"""Who may see and do what on the review screens (STYLE §2): one helper per object kind, each
starting from the tenant the membership names, so another tenant's object is a 404; and the
role checks, so an auditor's or labeler's POST is a 403 with nothing written; and who works
blind (review/blind.py says what that hides)."""

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from memory_review.assessments.models import PromotionCandidate
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Membership, Role


def get_memory_for(membership: Membership, pk: int) -> Memory:
    return get_object_or_404(
        Memory.objects.for_tenant(membership.tenant).select_related("source_event", "tenant"), pk=pk
    )


def get_candidate_for(membership: Membership, pk: int) -> PromotionCandidate:
    return get_object_or_404(
        PromotionCandidate.objects.for_tenant(membership.tenant).select_related(
            "source_event", "assessment", "memory"
        ),
        pk=pk,
    )


def require_reviewer(membership: Membership) -> None:
    if not membership.can_review:
        role = membership.get_role_display().lower()
        raise PermissionDenied(f"a {role} reads and exports; only reviewers, leads and admins decide")


def require_lead(membership: Membership) -> None:
    if not membership.can_lead:
        raise PermissionDenied("only a support lead or an admin may do this")


def require_auditor(membership: Membership) -> None:
    if not membership.can_audit:
        raise PermissionDenied("the audit trail is for compliance auditors, support leads and admins")


def require_labeler(membership: Membership) -> None:
    if not membership.can_label:
        raise PermissionDenied("labeling is for calibration labelers, reviewers, leads and admins")


def require_admin(
    membership: Membership, why: str = "only an admin adopts a policy; a support lead proposes one"
) -> None:
    if membership.role != Role.ADMIN:
        raise PermissionDenied(why)


def works_blind(membership: Membership) -> bool:
    """A calibration labeler labels past votes blind: no page tells them what the policy, Jev or
    another labeler made of an item before their own label on it is in. Reviewers, leads and
    admins label too, and see everything: their work is deciding."""
    return membership.role == Role.LABELER
