"""What a memory may go through (DESIGN §3), for the one transition function
(memory_review/lifecycle.py): the moves each kind of actor may make, what a move checks that the
table cannot, and what it writes besides the memory's own row."""

from memory_review import lifecycle
from memory_review.lifecycle import IllegalTransition, named, subject_taken, words

from . import changes
from .models import HELD, LIVE_STATUSES, Memory
from .models import MemoryStatus as M
from .tallies import tally_move

# (actor kind, action) -> (statuses it may start from, status it ends in).
_ANY_MEMORY = frozenset(M) - {M.DELETED}
_LIVE_OR_REVIEW = frozenset({M.ACTIVE, M.NEEDS_REVIEW})
_DEAD = frozenset({M.CONTRADICTED, M.SUPERSEDED, M.EXPIRED})

MEMORY_MOVES: lifecycle.Moves = {
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


def _prepare(row: Memory, *, action: str, target: str, now, actor, verdict, flagged_for) -> list[str]:
    """What the table alone cannot say: one live memory per subject and scope, and nothing past
    its hard TTL comes back to life (code expires it instead). A memory sent to review says when,
    and for what: what the review queue orders and filters by."""
    if target == M.ACTIVE and row.is_expired(now):
        passed = f"{row.valid_until:%Y-%m-%d %H:%M} UTC"
        raise IllegalTransition(f"cannot {words(action)} {named(row)}: its hard TTL passed at {passed}")
    if target in LIVE_STATUSES and row.status not in LIVE_STATUSES:
        if Memory.objects.holding_subject(row).exists():
            raise subject_taken(row, f"{words(action)} {named(row)}")
    if target != M.NEEDS_REVIEW:
        return []
    row.flagged_at = now
    row.flagged_for = flagged_for or (
        verdict.disposition if verdict is not None else HELD if action == "hold" else actor.kind
    )
    return ["flagged_at", "flagged_for"]


def _after(row: Memory, audit, from_status: str) -> None:
    changes.record_move(row, audit)  # the agents' feed and the webhooks' outbox
    # Striped count rows, each taken in status order (tallies.py), so opposite moves never
    # deadlock and concurrent ones rarely meet.
    tally_move(tenant_id=row.tenant_id, from_status=from_status, to_status=row.status)


lifecycle.register(
    Memory,
    lifecycle.Kind(
        noun="memory",
        moves=MEMORY_MOVES,
        audit_field="memory",
        hash_field="content_hash",
        prepare=_prepare,
        after=_after,
    ),
)
