"""The one function that changes a status (DESIGN §3). Nothing else writes `status`.

`transition()` locks the row, checks that the move is allowed for this kind of actor and that
the row version is the one the actor saw, updates the row and appends the audit Transition, all
in one transaction. A refused move raises a LifecycleError and writes nothing.
"""

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory_review.assessments.models import CandidateStatus, PromotionCandidate, Verdict
from memory_review.audit import chain
from memory_review.audit.models import Transition
from memory_review.memories import changes
from memory_review.memories.models import HELD, LIVE_STATUSES, Memory
from memory_review.memories.models import MemoryStatus as M
from memory_review.memories.tallies import tally_move
from memory_review.ops import metrics
from memory_review.textlimits import fit

ACTOR_KINDS = ("policy", "user", "system")


class LifecycleError(Exception):
    """A move the lifecycle refuses. Nothing was written."""


class IllegalTransition(LifecycleError):
    pass


class StaleVersion(LifecycleError):
    """Someone else changed the row since the actor saw it: the race's loser gets this."""


@dataclass(frozen=True)
class Actor:
    """`policy:<version>`, `user:<id>` or `system:<job>`."""

    kind: str
    name: str

    def __post_init__(self):
        if self.kind not in ACTOR_KINDS:
            raise ValueError(f"unknown actor kind {self.kind!r}; expected one of {ACTOR_KINDS}")
        if not self.name:
            raise ValueError("an actor needs a name")

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @classmethod
    def user(cls, user) -> "Actor":
        return cls("user", str(user.pk))

    @classmethod
    def policy(cls, label: str) -> "Actor":
        return cls("policy", label)

    @classmethod
    def system(cls, job: str) -> "Actor":
        return cls("system", job)


# (actor kind, action) -> (statuses it may start from, status it ends in).
_ANY_MEMORY = frozenset(M) - {M.DELETED}
_LIVE_OR_REVIEW = frozenset({M.ACTIVE, M.NEEDS_REVIEW})
_DEAD = frozenset({M.CONTRADICTED, M.SUPERSEDED, M.EXPIRED})

MEMORY_MOVES: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    # The policy acts on votes; it never touches frozen, dead or deleted memories.
    ("policy", "flag"): (frozenset({M.ACTIVE}), M.NEEDS_REVIEW),
    ("policy", "confirm"): (frozenset({M.NEEDS_REVIEW}), M.ACTIVE),
    ("policy", "contradict"): (_LIVE_OR_REVIEW, M.CONTRADICTED),
    ("policy", "supersede"): (_LIVE_OR_REVIEW, M.SUPERSEDED),
    # People decide what the policy could not, and alone may revive the dead.
    ("user", "flag"): (frozenset({M.ACTIVE}), M.NEEDS_REVIEW),
    ("user", "approve"): (frozenset({M.NEEDS_REVIEW}), M.ACTIVE),
    ("user", "contradict"): (_LIVE_OR_REVIEW, M.CONTRADICTED),
    ("user", "supersede"): (_LIVE_OR_REVIEW, M.SUPERSEDED),
    ("user", "freeze"): (_LIVE_OR_REVIEW, M.FROZEN),
    ("user", "unfreeze"): (frozenset({M.FROZEN}), M.ACTIVE),
    ("user", "restore"): (_DEAD, M.ACTIVE),
    ("user", "forget"): (_ANY_MEMORY, M.DELETED),
    # Undoing a reviewer's own decision a moment after it (workflow/flow.py): back to the queue.
    ("user", "reopen"): (frozenset({M.ACTIVE, M.FROZEN, M.CONTRADICTED, M.SUPERSEDED}), M.NEEDS_REVIEW),
    # Jobs: the hard-TTL sweep and right-to-forget erasures. The sweep leaves frozen memories
    # pinned past their TTL; code expires one only when a person unfreezes it past its TTL.
    ("system", "expire"): (frozenset({M.ACTIVE, M.NEEDS_REVIEW, M.FROZEN}), M.EXPIRED),
    ("system", "erase"): (_ANY_MEMORY, M.DELETED),
    # A memory just written that hides text or touches what an attacker wants an agent to act on
    # waits for a person before any agent reads it as in force (memories/holds.py).
    ("system", "hold"): (frozenset({M.ACTIVE}), M.NEEDS_REVIEW),
}

_OPEN = frozenset({CandidateStatus.PROPOSED, CandidateStatus.NEEDS_REVIEW})

CANDIDATE_MOVES: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    # Code checks (missing source, duplicate) reject before any vote. The policy has no moves:
    # promotion runs in shadow mode, where its decision is only recorded.
    ("system", "reject"): (frozenset({CandidateStatus.PROPOSED}), CandidateStatus.REJECTED),
    # A right-to-forget erasure takes back what its subject's events proposed.
    ("system", "erase"): (_OPEN, CandidateStatus.REJECTED),
    ("user", "approve"): (_OPEN, CandidateStatus.APPROVED),
    ("user", "reject"): (_OPEN, CandidateStatus.REJECTED),
}


def moves_for(obj: Memory | PromotionCandidate) -> dict[tuple[str, str], tuple[frozenset[str], str]]:
    if isinstance(obj, Memory):
        return MEMORY_MOVES
    if isinstance(obj, PromotionCandidate):
        return CANDIDATE_MOVES
    raise TypeError(f"{type(obj).__name__} has no lifecycle")


def permits(obj: Memory | PromotionCandidate, actor_kind: str, action: str) -> bool:
    """Whether `action` by this kind of actor is allowed from `obj`'s current status."""
    move = moves_for(obj).get((actor_kind, action))
    return move is not None and obj.status in move[0]


def transition(
    *,
    obj: Memory | PromotionCandidate,
    action: str,
    actor: Actor,
    reason: str,
    seen_version: int,
    verdict: Verdict | None = None,
    request_id: str | None = None,
    flagged_for: str | None = None,
) -> Transition:
    """Move `obj` by `action` on behalf of `actor`. Updates `obj` in place on success.
    `flagged_for`: what sent it back to review, where the caller knows better than the move (an
    undo that reopens a memory held before it was trusted: `held` again)."""
    moves = moves_for(obj)
    if (actor.kind, action) not in moves:
        raise IllegalTransition(f"{actor.kind} actors cannot {_words(action)} a {_noun(obj)}")
    sources, target = moves[(actor.kind, action)]
    if not reason or not reason.strip():
        raise LifecycleError("a transition needs a reason")

    with transaction.atomic():
        row = type(obj).objects.select_for_update().get(pk=obj.pk)
        if row.row_version != seen_version:
            since = row.row_version - seen_version
            raise StaleVersion(
                f"{_named(row)} changed since you saw it ({since} change{'s' if since != 1 else ''} "
                f"since); its status is now {_status(row)}"
            )
        if row.status not in sources:
            raise IllegalTransition(f"cannot {_words(action)} {_named(row)}: its status is {_status(row)}")
        now = timezone.now()
        changed = ["status", "row_version", "updated_at"]
        if isinstance(row, Memory):
            _check_memory_move(row, action, target, now)
            if target == M.NEEDS_REVIEW:
                # What the review queue orders and filters by: when, and for what.
                row.flagged_at = now
                row.flagged_for = flagged_for or (
                    verdict.disposition if verdict is not None else HELD if action == "hold" else actor.kind
                )
                changed += ["flagged_at", "flagged_for"]
        from_status = row.status
        row.status = target
        row.row_version += 1
        try:
            row.save(update_fields=changed)
        except IntegrityError as exc:  # a concurrent write won the subject first
            raise subject_taken(row, f"{_words(action)} {_named(row)}") from exc
        try:
            audit = chain.append(
                Transition(
                    tenant_id=row.tenant_id,
                    memory=row if isinstance(row, Memory) else None,
                    candidate=row if isinstance(row, PromotionCandidate) else None,
                    from_status=from_status,
                    to_status=target,
                    action=action,
                    actor=str(actor),
                    reason=fit(reason.strip(), 1000),
                    verdict=verdict,
                    row_version=row.row_version,
                    request_id=request_id or None,  # '' reads back as NULL on Oracle: hash the same
                    content_hash=row.content_hash if isinstance(row, Memory) else row.claim_hash,
                    created_at=now,
                )
            )
        except chain.ChainBroken as exc:
            raise LifecycleError(f"nothing was changed: {exc}") from exc
        if isinstance(row, Memory):
            changes.record_move(row, audit)  # the agents' feed and the webhooks' outbox
            # Striped count rows, each taken in status order (tallies.py), so opposite moves
            # never deadlock and concurrent ones rarely meet.
            tally_move(tenant_id=row.tenant_id, from_status=from_status, to_status=target)
    transaction.on_commit(lambda: metrics.TRANSITIONS.labels(actor.kind, action).inc())
    obj.status, obj.row_version = row.status, row.row_version
    if isinstance(row, Memory):
        obj.flagged_at, obj.flagged_for = row.flagged_at, row.flagged_for
    return audit


def _check_memory_move(row: Memory, action: str, target: str, now) -> None:
    """What the table alone cannot say: one live memory per subject and scope, and nothing past
    its hard TTL comes back to life (code expires it instead)."""
    if target == M.ACTIVE and row.is_expired(now):
        raise IllegalTransition(
            f"cannot {_words(action)} {_named(row)}: its hard TTL passed at "
            f"{row.valid_until:%Y-%m-%d %H:%M} UTC"
        )
    if target in LIVE_STATUSES and row.status not in LIVE_STATUSES:
        if Memory.objects.holding_subject(row).exists():
            raise subject_taken(row, f"{_words(action)} {_named(row)}")


# Refusals are read by people (the screens show them as they are): names and words, not ids and
# codes (issue 15).
def _noun(obj) -> str:
    return "memory" if isinstance(obj, Memory) else "proposed memory"


def _named(obj) -> str:
    return f"“{obj.subject}”"


def _words(code: str) -> str:
    return code.replace("_", " ")


def _status(obj) -> str:
    return obj.get_status_display().lower()


def subject_taken(memory: Memory, doing: str) -> LifecycleError:
    """The error for a second live memory on one subject and scope (memory_live_subject_uq)."""
    return LifecycleError(
        f"cannot {doing}: another live memory already holds subject "
        f"{memory.subject!r} in this scope ({memory.scope_label})"
    )
