"""The two-person rule: where a tenant keeps it, erasing a person's data, forgetting a memory,
approving a memory held before it was trusted (memories/holds.py: it hid text, or touched
instructions, payment details, permissions or identity) and changing the tenant's security
settings or members (compliance/security.py) take a second lead or admin. The first asks (in the
app, or from the command line); the request waits a day; another confirms (and it happens then)
or anyone with the right cancels it. Every step is kept, and no record names a confirmer who did
not confirm here, signed in."""

from django.db import transaction
from django.utils import timezone

from memory_review.audit import identities
from memory_review.lifecycle import Actor, LifecycleError, transition
from memory_review.memories.models import DualControl, Memory
from memory_review.memories.services import memory_forget
from memory_review.tenancy.models import Membership, Role, Tenant

from . import security
from .erasure import erase_subject

LIFETIME = DualControl.LIFETIME


class DualControlError(LifecycleError):
    pass


def pending(tenant: Tenant, now=None):
    """Requests waiting for a second person, newest first."""
    return (
        DualControl.objects.for_tenant(tenant)
        .filter(outcome__isnull=True, expires_at__gt=now or timezone.now())
        .select_related("requested_by", "memory")
        .order_by("-requested_at")
    )


def request_erasure(*, tenant: Tenant, user_id: str, reason: str, by) -> DualControl:
    """`by` is the admin who asks, or None for the command line (the host's operator)."""
    if not (user_id or "").strip() or not (reason or "").strip():
        raise DualControlError("an erasure needs the user id and a reason")
    return _ask(tenant=tenant, kind=DualControl.Kind.ERASE, user_id=user_id.strip(), reason=reason, by=by)


def request_forget(*, memory: Memory, reason: str, seen_version: int, by) -> DualControl:
    if not (reason or "").strip():
        raise DualControlError("forgetting needs a reason: it is kept in the audit trail")
    if pending(memory.tenant).filter(memory=memory, kind=DualControl.Kind.FORGET).exists():
        raise DualControlError("forgetting this memory is already waiting for a second person")
    return _ask(
        tenant=memory.tenant, kind=DualControl.Kind.FORGET, memory=memory, seen_version=seen_version,
        reason=reason, by=by,
    )  # fmt: skip


@transaction.atomic
def request_approve(
    *, memory: Memory, reason: str, seen_version: int, by, action: str = "approve"
) -> DualControl:
    """Approving a held memory: its words reach agents only once a second person agrees. The
    memory's row is locked first, so two people asking at once make one request."""
    list(Memory.objects.select_for_update().filter(pk=memory.pk).values_list("pk", flat=True))
    if pending(memory.tenant).filter(memory=memory, kind=DualControl.Kind.APPROVE).exists():
        raise DualControlError("approving this memory is already waiting for a second person")
    return _ask(
        tenant=memory.tenant, kind=DualControl.Kind.APPROVE, memory=memory, seen_version=seen_version,
        reason=reason, by=by, change={"action": action},
    )  # fmt: skip


def _ask(*, tenant: Tenant, kind: str, reason: str, by, **target) -> DualControl:
    _as_sealed(tenant, by)
    now = timezone.now()
    return DualControl.objects.create(
        tenant=tenant, kind=kind, reason=reason.strip(), requested_by=by, requested_at=now,
        expires_at=now + LIFETIME, **target,
    )  # fmt: skip


@transaction.atomic
def confirm(*, request: DualControl, by, request_id: str | None = None) -> DualControl:
    """The second person says yes, and it happens now, in the same transaction."""
    row = _open(request)
    _as_sealed(row.tenant, by)
    if row.requested_by_id == by.pk:
        raise DualControlError("the two-person rule needs someone other than the person who asked")
    if not Membership.objects.filter(tenant=row.tenant, user=by, role__in=(Role.LEAD, Role.ADMIN)).exists():
        raise DualControlError("only a lead or an admin of this tenant may confirm")
    who = f"user {row.requested_by_id}" if row.requested_by_id else "the command line"
    asked = f"asked by {who} at {row.requested_at:%Y-%m-%d %H:%M} UTC"
    if row.kind == DualControl.Kind.ERASE:
        row.erasure = erase_subject(
            tenant=row.tenant, user_id=row.user_id, reason=row.reason,
            requested_by=str(Actor.user(row.requested_by)) if row.requested_by else "system:erase_subject",
            confirmed_by=str(Actor.user(by)),
        )  # fmt: skip
    elif row.kind in (DualControl.Kind.SETTINGS, DualControl.Kind.MEMBERSHIP):
        security.check_confirmer(row, by)
        row.decided_by, row.decided_at = by, timezone.now()
        security.apply(row)
    elif row.kind == DualControl.Kind.APPROVE:
        transition(
            obj=row.memory, action=(row.change or {}).get("action", "approve"), actor=Actor.user(by),
            seen_version=row.seen_version,
            request_id=request_id,
            reason=f"{row.reason} ({asked}; confirmed under the two-person rule, request {row.pk})",
        )  # fmt: skip
    else:
        memory_forget(
            memory=row.memory, actor=Actor.user(by), seen_version=row.seen_version, request_id=request_id,
            reason=f"{row.reason} ({asked}; confirmed under the two-person rule, request {row.pk})",
        )  # fmt: skip
    return _decide(row, by, "confirmed")


@transaction.atomic
def cancel(*, request: DualControl, by) -> DualControl:
    return _decide(_open(request), by, "cancelled")


def _as_sealed(tenant: Tenant, by) -> None:
    """Both people of the rule are who their sealed accounts say (audit/identities.py): a password
    hash borrowed around the application confirms nothing."""
    if by is not None and (problem := identities.unsealed(by.pk, tenant.pk)):
        raise DualControlError(f"{by.username} cannot act under the two-person rule: {problem}")


def _open(request: DualControl) -> DualControl:
    row = (
        DualControl.objects.select_for_update(of=("self",))
        .select_related("tenant", "memory", "requested_by")
        .get(pk=request.pk)
    )
    if row.outcome:
        raise DualControlError(f"this request was already {row.outcome}")
    if row.expires_at <= timezone.now():
        raise DualControlError("this request lapsed (a day passed): ask again")
    return row


def _decide(row: DualControl, by, outcome: str) -> DualControl:
    row.decided_by, row.decided_at, row.outcome = by, row.decided_at or timezone.now(), outcome
    row.save(update_fields=["decided_by", "decided_at", "outcome", "erasure"])
    return row
