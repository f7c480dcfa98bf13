"""What a proposed memory may go through, for the one transition function
(memory_review/lifecycle.py): the moves each kind of actor may make."""

from memory_review import lifecycle

from .models import CandidateStatus, PromotionCandidate

_OPEN = frozenset({CandidateStatus.PROPOSED, CandidateStatus.NEEDS_REVIEW})

# (actor kind, action) -> (statuses it may start from, status it ends in).
CANDIDATE_MOVES: lifecycle.Moves = {
    # Code checks (missing source, duplicate) reject before any vote. The policy has no moves:
    # promotion runs in shadow mode, where its decision is only recorded.
    ("system", "reject"): (frozenset({CandidateStatus.PROPOSED}), CandidateStatus.REJECTED),
    # A right-to-forget erasure takes back what its subject's events proposed.
    ("system", "erase"): (_OPEN, CandidateStatus.REJECTED),
    ("user", "approve"): (_OPEN, CandidateStatus.APPROVED),
    ("user", "reject"): (_OPEN, CandidateStatus.REJECTED),
}

lifecycle.register(
    PromotionCandidate,
    lifecycle.Kind(
        noun="proposed memory", moves=CANDIDATE_MOVES, audit_field="candidate", hash_field="claim_hash"
    ),
)
