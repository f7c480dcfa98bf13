"""What a reviewer decides about a memory: every move through lifecycle.transition(), with the
row version the reviewer saw, so a colleague's or the policy's change since is never overwritten
(the loser is told what changed, by whom and when)."""

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from memory_review.assessments.models import Disposition, Verdict
from memory_review.audit.models import Transition
from memory_review.compliance.dual_control import request_approve, request_forget
from memory_review.lifecycle import Actor, LifecycleError, StaleVersion, permits, transition
from memory_review.memories import holds
from memory_review.memories.models import Memory, MemoryLink, MemoryStatus
from memory_review.memories.moves import MEMORY_MOVES
from memory_review.memories.services import memory_forget, memory_write
from memory_review.tenancy.names import actor_names

from .claims import ClaimHeld, claims_end_on_decision, held_claim

# What a decision records when the person typed no reason: the screens say it is not their words.
NO_REASON = "(no reason given)"


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
# Moves that put a memory's words in force: under the two-person rule, for a memory held before it
# was trusted and not approved since, they wait for a second person (compliance/dual_control).
RELEASING = ("approve", "restore", "freeze", "unfreeze")
# Moves that would keep a memory past its hard TTL in force: code expires it instead.
EXPIRE_INSTEAD = ("approve", "freeze", "unfreeze")
KEEP = object()  # a new hard TTL not given: keep the memory's own


class ReasonRequired(LifecycleError):
    """Input the reviewer must give (a reason, the corrected text, a new hard TTL): a 400."""


@dataclass
class Outcome:
    memory: Memory
    message: str
    successor: Memory | None = None
    expired_instead: bool = False
    move: Transition | None = None  # the reviewer's own move, when one was made


def available_actions(memory: Memory) -> list[tuple[str, Action]]:
    """What a reviewer may do with this memory now, by the lifecycle's table."""
    return [(name, action) for name, action in ACTIONS.items() if permits(memory, "user", name)]


def bulk_actions_for(statuses) -> list[tuple[str, Action]]:
    """The moves a bulk action may offer on a set holding these statuses: each valid from every
    one of them (memories/moves.py), so none of the set is refused for its status; forgetting
    is never done in bulk."""
    statuses = set(statuses)
    return [
        (name, action)
        for name, action in ACTIONS.items()
        if name != "forget" and statuses and statuses <= MEMORY_MOVES[("user", name)][0]
    ]


def can_rewrite(memory: Memory) -> bool:
    return permits(memory, "user", "supersede")


def _check(memory: Memory, *, user, can_lead: bool, action: Action, reason: str) -> tuple[Memory, str]:
    """The memory's row, locked (claims are taken under the same lock, so one taken a moment
    ago is seen), and the reason to record."""
    if action.reason_required and not reason.strip():
        raise ReasonRequired(f"{action.label.lower()} needs a reason: it is kept in the audit trail")
    row = Memory.objects.select_for_update().select_related("tenant").get(pk=memory.pk)
    held = held_claim(row)
    if held is not None and held.holder_id != user.pk and not can_lead:
        raise ClaimHeld(held)
    return row, reason.strip() or f"{action.done} in review {NO_REASON}"


def _new_ttl(row: Memory, valid_until, doing: str) -> tuple[object, str]:
    """The hard TTL a revived or rewritten memory will have, and what to say about it in the
    audit reason. A memory past its TTL needs a new one (a time to come, or None for none)."""
    if valid_until is KEEP:
        if row.is_expired():
            until = f"{row.valid_until:%Y-%m-%d %H:%M} UTC"
            raise ReasonRequired(
                f"its hard TTL passed at {until}: to {doing} it, give it a new one (or none)"
            )
        return KEEP, ""
    if valid_until is not None and valid_until <= timezone.now():
        raise ReasonRequired(f"the new hard TTL ({valid_until:%Y-%m-%d %H:%M}) must be in the future")
    old = f"{row.valid_until:%Y-%m-%d %H:%M} UTC" if row.valid_until else "none"
    new = f"{valid_until:%Y-%m-%d %H:%M} UTC" if valid_until else "none"
    return valid_until, f" (hard TTL {old} → {new})"


@transaction.atomic
def memory_decide(
    *,
    memory: Memory,
    action: str,
    user,
    reason: str,
    seen_version: int,
    can_lead: bool = False,
    valid_until=KEEP,
    request_id: str | None = None,
) -> Outcome:
    """Approve, freeze, unfreeze, restore, confirm a kill, send to review or forget. Restoring
    a memory past its hard TTL needs `valid_until` (a time to come, or None)."""
    if action not in ACTIONS:
        raise LifecycleError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    spec = ACTIONS[action]
    row, reason = _check(memory, user=user, can_lead=can_lead, action=spec, reason=reason)
    actor = Actor.user(user)
    if action in EXPIRE_INSTEAD and row.is_expired() and row.row_version == seen_version:
        return _expire_instead(memory, action=action, seen_version=seen_version, request_id=request_id)
    if action == "restore" and row.row_version == seen_version:
        ttl, said = _new_ttl(row, valid_until, "restore")
        if ttl is not KEEP:
            Memory.objects.filter(pk=row.pk).update(valid_until=ttl)
            reason += said
    if action in RELEASING and row.tenant.two_person_rule and holds.unreleased(row):
        request = request_approve(
            memory=row, reason=reason, seen_version=seen_version, by=user, action=action
        )
        return Outcome(
            memory=memory,
            message=f"{memory.subject}: it was held before it was trusted, so to {action} it (its words in "
            "force) waits for a second lead or admin to confirm "
            f"(until {request.expires_at:%Y-%m-%d %H:%M} UTC).",
        )
    if action == "forget" and row.tenant.two_person_rule:
        request = request_forget(memory=row, reason=reason, seen_version=seen_version, by=user)
        return Outcome(
            memory=memory,
            message=f"{memory.subject}: forgetting it waits for a second lead or admin to confirm "
            f"(until {request.expires_at:%Y-%m-%d %H:%M} UTC).",
        )
    move = None
    if action == "forget":
        memory_forget(
            memory=memory, actor=actor, reason=reason, seen_version=seen_version, request_id=request_id
        )
    else:
        move = transition(
            obj=memory,
            action=action,
            actor=actor,
            reason=reason,
            seen_version=seen_version,
            request_id=request_id,
        )
    if memory.status != MemoryStatus.NEEDS_REVIEW:
        claims_end_on_decision(memory=memory, by=user, action=action)
    return Outcome(memory=memory, message=f"{memory.subject}: {spec.done}.", move=move)


def _expire_instead(memory: Memory, *, action: str, seen_version: int, request_id: str | None) -> Outcome:
    """Past its hard TTL a memory never stays in force: code expires it and says so, instead of
    the reviewer's move (approving it, or freezing or unfreezing it, would keep it live)."""
    until = f"{memory.valid_until:%Y-%m-%d %H:%M} UTC"
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
    valid_until=KEEP,
    request_id: str | None = None,
) -> Outcome:
    """The reviewer writes the corrected memory: stored as the next version, tied to the evidence
    that showed the old one changed, linked `supersedes` with origin `reviewer`. It keeps the old
    hard TTL unless given a new one; past it, it needs one."""
    row, reason = _check(memory, user=user, can_lead=can_lead, action=REWRITE, reason=reason)
    if not content.strip():
        raise ReasonRequired("a rewrite needs the corrected text")
    ttl, said = _new_ttl(row, valid_until, "rewrite")
    actor = Actor.user(user)
    was_held = row.tenant.two_person_rule and holds.unreleased(row)
    successor = memory_write(
        event=evidence_for_rewrite(row),
        kind=row.kind,
        subject=row.subject,
        content=content.strip(),
        written_by=str(actor),
        user_id=row.user_id,
        agent_id=row.agent_id,
        thread_id=row.thread_id,
        valid_until=row.valid_until if ttl is KEEP else ttl,
        supersedes=memory,
        seen_version=seen_version,
        actor=actor,
        reason=f"rewritten in review: {reason}{said}",
        link_origin=MemoryLink.Origin.REVIEWER,
        request_id=request_id,
    )
    if was_held:
        # One person's rewrite of a held memory is not a second person's approval: it waits too.
        holds.hold(successor, ["rewritten from a memory held before it was trusted, so under the two-person "
                               "rule a second lead or admin approves it"], request_id=request_id)  # fmt: skip
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
    moves = list(
        Transition.objects.filter(memory=memory, row_version__gt=seen_version).order_by("row_version")
    )
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
            why = f"changed since you chose it: now {conflict.memory.get_status_display().lower()}"
            if last is not None:
                why += f", by {last.actor_name}"
            result.skipped.append((conflict.memory, why))
        except (LifecycleError, ClaimHeld) as exc:
            result.skipped.append((memory, str(exc)))
    return result
