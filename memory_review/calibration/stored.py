"""A candidate policy replayed over every stored vote of a tenant, beside the active one: no Jev
call, streamed in chunks, so millions of verdicts never sit in memory at once (issue 9, item 3).

What it gives: how many verdicts each policy would put in each disposition, and the verdicts
(with their memories) whose decision would change, the first `LISTED` of them by id.
"""

from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from memory_review.assessments.models import Assessment, Verdict
from memory_review.assessments.policy import Thresholds
from memory_review.tenancy.models import Tenant

from .sweep import CODES, dispositions

LISTED = 500
CHUNK = 50_000


@dataclass
class StoredReplay:
    verdicts: int = 0
    active: Counter = field(default_factory=Counter)
    candidate: Counter = field(default_factory=Counter)
    changed: int = 0
    changes: list[tuple[int, int, str, str]] = field(
        default_factory=list
    )  # verdict, memory, active, candidate


def replay_stored(
    tenant: Tenant, *, active: Thresholds, candidate: Thresholds, chunk: int = CHUNK
) -> StoredReplay:
    """Every verdict with votes (code-settled ones have none), in id order."""
    out = StoredReplay()
    rows = (
        Verdict.objects.filter(tenant=tenant, bears__isnull=False, still_true__isnull=False)
        .exclude(assessment__model_name=Assessment.REPLAYED_MODEL)  # copies: each vote counts once
        .order_by("pk")
        .values_list("pk", "memory_id", *Verdict.VOTE_NAMES)
    )
    batch: list[tuple] = []
    for row in rows.iterator(chunk_size=chunk):
        batch.append(row)
        if len(batch) == chunk:
            _replay_chunk(batch, active, candidate, out)
            batch = []
    if batch:
        _replay_chunk(batch, active, candidate, out)
    return out


def _replay_chunk(batch: list[tuple], active: Thresholds, candidate: Thresholds, out: StoredReplay) -> None:
    table = np.array(batch, dtype=np.float64)
    table = np.nan_to_num(table, nan=0.0)  # a vote left out (None) counts as 0
    votes = SimpleNamespace(**{name: table[:, 2 + i] for i, name in enumerate(Verdict.VOTE_NAMES)})
    now, then = dispositions(votes, active), dispositions(votes, candidate)
    out.verdicts += len(batch)
    _count(out.active, now)
    _count(out.candidate, then)
    moved = np.flatnonzero(now != then)
    out.changed += int(moved.size)
    for i in moved[: max(0, LISTED - len(out.changes))]:
        out.changes.append((int(batch[i][0]), int(batch[i][1]), CODES[now[i]], CODES[then[i]]))


def _count(counter: Counter, codes: np.ndarray) -> None:
    for code, n in enumerate(np.bincount(codes, minlength=len(CODES))):
        if n:
            counter[CODES[code]] += int(n)
