"""Claiming a queue item: a reservation that lapses unless renewed, so two reviewers do not work
the same memory. Claims are rows kept after release, so who held what is on record."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory_review.memories.models import Memory, MemoryStatus
from memory_review.tenancy.models import Membership
from memory_review.tenancy.names import display_name
from memory_review.textlimits import fit

from .models import Claim


class ClaimError(Exception):
    """A claim the workspace refuses. Nothing was written."""


class ClaimHeld(ClaimError):
    def __init__(self, claim: Claim):
        self.claim = claim
        super().__init__(
            f"{display_name(claim.holder)} holds this item until "
            f"{timezone.localtime(claim.expires_at):%H:%M}; ask them or a lead to release it"
        )


def claim_minutes() -> int:
    return settings.REVIEW_CLAIM_MINUTES


def held_claim(memory: Memory, now=None) -> Claim | None:
    return Claim.objects.held(now).filter(memory=memory).select_related("holder").first()


def _locked(memory: Memory) -> Memory:
    """The memory's row, locked: claims on one memory are taken one at a time."""
    return Memory.objects.select_for_update().get(pk=memory.pk)


def _must_be_queued(row: Memory) -> None:
    if row.status != MemoryStatus.NEEDS_REVIEW:
        raise ClaimError(
            "only memories in the review queue can be claimed; "
            f"this one is {row.get_status_display().lower()}"
        )


@transaction.atomic
def claim_take(*, memory: Memory, user) -> Claim:
    """Claim a queue item for `user` (renewing their own claim), unless someone else holds it."""
    row = _locked(memory)
    _must_be_queued(row)
    now = timezone.now()
    held = held_claim(row, now)
    if held is not None and held.holder_id != user.pk:
        raise ClaimHeld(held)
    if held is not None:
        return _extend(held, now)
    return _new(row, holder=user, now=now)


@transaction.atomic
def claim_renew(*, memory: Memory, user) -> Claim | None:
    """Extend `user`'s claim while their page is open; None when they no longer hold it."""
    _locked(memory)
    now = timezone.now()
    held = held_claim(memory, now)
    if held is None or held.holder_id != user.pk:
        return None
    return _extend(held, now)


def _new(memory: Memory, *, holder, now) -> Claim:
    return Claim.objects.create(
        tenant_id=memory.tenant_id,
        memory=memory,
        holder=holder,
        claimed_at=now,
        expires_at=now + timedelta(minutes=claim_minutes()),
    )


def _extend(claim: Claim, now) -> Claim:
    claim.expires_at = now + timedelta(minutes=claim_minutes())
    claim.save(update_fields=["expires_at"])
    return claim


@transaction.atomic
def claim_release(*, memory: Memory, by, note: str, can_lead: bool) -> Claim:
    """The holder lets go of their claim; a lead may release anyone's."""
    _locked(memory)
    held = held_claim(memory)
    if held is None:
        raise ClaimError("nobody holds this item")
    if held.holder_id != by.pk and not can_lead:
        raise ClaimHeld(held)
    _end(held, by=by, note=note)
    return held


@transaction.atomic
def claim_reassign(*, memory: Memory, to, by) -> Claim:
    """A lead hands a queue item to another reviewer of the tenant."""
    row = _locked(memory)
    _must_be_queued(row)
    membership = Membership.objects.filter(tenant_id=row.tenant_id, user=to).first()
    if membership is None or not membership.can_review:
        raise ClaimError(f"{display_name(to)} is not a reviewer in this tenant")
    now = timezone.now()
    held = held_claim(row, now)
    if held is not None and held.holder_id == to.pk:
        return held
    if held is not None:
        _end(held, by=by, note=f"reassigned to {display_name(to)} by {display_name(by)}")
    return _new(row, holder=to, now=now)


@transaction.atomic
def claim_ask_release(*, memory: Memory, by) -> Claim:
    """Ask the holder to let go: their pages say who asked (the claim stays theirs until then)."""
    _locked(memory)
    held = held_claim(memory)
    if held is None:
        raise ClaimError("nobody holds this item: claim it")
    if held.holder_id == by.pk:
        raise ClaimError("you hold this item yourself")
    held.release_asked_by, held.release_asked_at = by, timezone.now()
    held.save(update_fields=["release_asked_by", "release_asked_at"])
    return held


@transaction.atomic
def claim_take_over(*, memory: Memory, by) -> Claim:
    """A lead takes a colleague's item: the colleague's claim ends, naming who took it."""
    return claim_reassign(memory=memory, to=by, by=by)


def claims_end_on_decision(*, memory: Memory, by, action: str) -> None:
    """A decided item leaves the queue: whoever held it is done with it."""
    for held in Claim.objects.held().filter(memory=memory):
        _end(held, by=by, note=f"the memory was decided ({action})")


def _end(claim: Claim, *, by, note: str) -> None:
    claim.released_at = timezone.now()
    claim.released_by = by
    claim.release_note = fit(note, 200)
    claim.save(update_fields=["released_at", "released_by", "release_note"])
