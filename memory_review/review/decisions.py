"""What a reviewer decides about a memory: every move through lifecycle.transition(), with the
row version the reviewer saw, so a colleague's or the policy's change since is never overwritten
(the loser is told what changed, by whom and when)."""

from dataclasses import dataclass, field

from django.db import transaction

from memory_review.assessments.models import Disposition, Verdict
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, LifecycleError, StaleVersion, permits, transition
from memory_review.memories.models import Memory, MemoryLink, MemoryStatus
from memory_review.memories.services import memory_forget, memory_write

from .claims import ClaimHeld, claims_end_on_decision, held_claim
from .names import actor_names


@dataclass(frozen=True)
class Action:
    label: str
    done: str  # what the confirmation says happened
    key: str | None = None  # its keyboard shortcut
    reason_required: bool = False
    danger: bool = False


# The reviewer's actions, in the order the page offers them. Which ones a memory allows is the
# lifecycle's table to say (lifecycle.permits); rewrite is a supersede with a successor.
ACTIONS: dict[str, Action] = {
    "approve": Action("Approve", "approved", key="a"),
    "freeze": Action("Freeze", "frozen", key="f"),
    "unfreeze": Action("Unfreeze", "unfrozen"),
    "restore": Action("Restore", "restored", key="r", reason_required=True),
    "contradict": Action("Confirm contradicted", "marked contradicted", danger=True),
    "supersede": Action("Confirm superseded", "marked superseded", danger=True),
    "flag": Action("Send to review", "sent to review"),
    "forget": Action("Forget", "forgotten (content erased)", reason_required=True, danger=True),
}
REWRITE = Action("Rewrite", "rewritten", key="e", reason_required=True)
# Moves that revive a memory: code checks its hard TTL first.
REVIVING = ("approve", "unfreeze", "restore")


class ReasonRequired(LifecycleError):
    pass


@dataclass
class Outcome:
    memory: Memory
    message: str
    successor: Memory | None = None
    expired_instead: bool = False


def available_actions(memory: Memory) -> list[tuple[str, Action]]:
    """What a reviewer may do with this memory now, by the lifecycle's table."""
    return [(name, action) for name, action in ACTIONS.items() if permits(memory, "user", name)]


def can_rewrite(memory: Memory) -> bool:
    return permits(memory, "user", "supersede")


def _check(memory: Memory, *, user, can_lead: bool, action: Action, reason: str) -> str:
    if action.reason_required and not reason.strip():
        raise ReasonRequired(f"{action.label.lower()} needs a reason: it is kept in the audit trail")
    held = held_claim(memory)
    if held is not None and held.holder_id != user.pk and not can_lead:
        raise ClaimHeld(held)
    return reason.strip() or f"{action.done} in review (no reason given)"


@transaction.atomic
def memory_decide(
    *,
    memory: Memory,
    action: str,
    user,
    reason: str,
    seen_version: int,
    can_lead: bool = False,
    request_id: str | None = None,
) -> Outcome:
    """Approve, freeze, unfreeze, restore, confirm a kill, send to review or forget."""
    if action not in ACTIONS:
        raise LifecycleError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    spec = ACTIONS[action]
    reason = _check(memory, user=user, can_lead=can_lead, action=spec, reason=reason)
    actor = Actor.user(user)
    if action in REVIVING and memory.is_expired():
        return _expire_instead(memory, action=action, seen_version=seen_version, request_id=request_id)
    if action == "forget":
        memory_forget(
            memory=memory, actor=actor, reason=reason, seen_version=seen_version, request_id=request_id
        )
    else:
        transition(
            obj=memory,
            action=action,
            actor=actor,
            reason=reason,
            seen_version=seen_version,
            request_id=request_id,
        )
    if memory.status != MemoryStatus.NEEDS_REVIEW:
        claims_end_on_decision(memory=memory, by=user, action=action)
    return Outcome(memory=memory, message=f"{memory.subject}: {spec.done}.")


def _expire_instead(memory: Memory, *, action: str, seen_version: int, request_id: str | None) -> Outcome:
    """Past its hard TTL a memory never comes back to life: code expires it (when it is in
    review or active) and says so, instead of the reviewer's move."""
    until = f"{memory.valid_until:%Y-%m-%d %H:%M} UTC"
    if not permits(memory, "system", "expire"):
        raise LifecycleError(f"cannot {action} memory {memory.pk}: its hard TTL passed at {until}")
    transition(
        obj=memory,
        action="expire",
        actor=Actor.system("ttl-check"),
        reason=f"hard TTL passed (valid until {until}); a reviewer tried to {action} it",
        seen_version=seen_version,
        request_id=request_id,
    )
    claims_end_on_decision(memory=memory, by=None, action="expire")
    return Outcome(
        memory=memory,
        message=f"{memory.subject}: its hard TTL passed at {until}, so code expired it instead of "
        f"letting it {action}.",
        expired_instead=True,
    )


@transaction.atomic
def memory_rewrite(
    *,
    memory: Memory,
    user,
    content: str,
    reason: str,
    seen_version: int,
    can_lead: bool = False,
    request_id: str | None = None,
) -> Outcome:
    """The reviewer writes the corrected memory: stored as the next version, tied to the evidence
    that showed the old one changed, linked `supersedes` with origin `reviewer`."""
    reason = _check(memory, user=user, can_lead=can_lead, action=REWRITE, reason=reason)
    if not content.strip():
        raise ReasonRequired("a rewrite needs the corrected text")
    actor = Actor.user(user)
    successor = memory_write(
        event=evidence_for_rewrite(memory),
        kind=memory.kind,
        subject=memory.subject,
        content=content.strip(),
        written_by=str(actor),
        user_id=memory.user_id,
        agent_id=memory.agent_id,
        thread_id=memory.thread_id,
        valid_until=memory.valid_until,
        supersedes=memory,
        seen_version=seen_version,
        actor=actor,
        reason=f"rewritten in review: {reason}",
        link_origin=MemoryLink.Origin.REVIEWER,
        request_id=request_id,
    )
    claims_end_on_decision(memory=memory, by=user, action="rewrite")
    return Outcome(
        memory=memory,
        successor=successor,
        message=f"{memory.subject}: rewritten as version {successor.version}.",
    )


def evidence_for_rewrite(memory: Memory):
    """The event that showed the memory changed (its latest partial or bearing verdict), or the
    memory's own source when nothing did."""
    verdict = (
        Verdict.objects.filter(memory=memory, event__erased_at__isnull=True)
        .filter(disposition__in=[Disposition.PARTIAL, Disposition.UNCERTAIN])
        .select_related("event")
        .order_by("-pk")
        .first()
    )
    return verdict.event if verdict else memory.source_event


@dataclass
class Conflict:
    """What changed since the reviewer loaded the page: GitHub's "this changed since you loaded
    it", with who and when, and never an overwrite."""

    memory: Memory
    seen_version: int
    moves: list[Transition] = field(default_factory=list)


def conflict_for(memory: Memory, seen_version: int) -> Conflict:
    current = Memory.objects.get(pk=memory.pk)
    moves = list(Transition.objects.filter(memory=memory, row_version__gt=seen_version).order_by("seq"))
    names = actor_names(move.actor for move in moves)
    for move in moves:
        move.actor_name = names[move.actor]
    return Conflict(memory=current, seen_version=seen_version, moves=moves)


@dataclass
class BulkResult:
    done: list[Outcome] = field(default_factory=list)
    skipped: list[tuple[Memory | int, str]] = field(default_factory=list)


def bulk_decide(
    *, memories: dict[int, int], queryset, action: str, user, reason: str, request_id: str | None = None
) -> BulkResult:
    """Act on exactly the set the lead confirmed (memory id -> the row version shown then): each
    memory its own audited transition; one that changed meanwhile is skipped and listed, never
    overwritten."""
    result = BulkResult()
    found = {
        memory.pk: memory for memory in queryset.filter(pk__in=list(memories)).select_related("source_event")
    }
    for pk, version in memories.items():
        memory = found.get(pk)
        if memory is None:
            result.skipped.append((pk, "not found in this tenant"))
            continue
        try:
            result.done.append(
                memory_decide(
                    memory=memory,
                    action=action,
                    user=user,
                    reason=reason,
                    seen_version=version,
                    can_lead=True,
                    request_id=request_id,
                )
            )
        except StaleVersion:
            conflict = conflict_for(memory, version)
            last = conflict.moves[-1] if conflict.moves else None
            why = f"changed since you chose it: now {conflict.memory.status}"
            if last is not None:
                why += f", by {last.actor_name}"
            result.skipped.append((conflict.memory, why))
        except (LifecycleError, ClaimHeld) as exc:
            result.skipped.append((memory, str(exc)))
    return result
