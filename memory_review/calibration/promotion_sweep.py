"""Promotion calibration (issue 9, item 5): `decide_promotion()` over labelled candidates as
arrays, scored and swept like the invalidation table.

The worst failure here is a **false promotion**: the policy promotes a claim no labeler would
promote. The sweep finds the best strict accuracy that adds none (no more than the baseline
has), ties going to fewer false promotions, then fewer left for review, then closeness to the
baseline; the dead band (`promote_margin`) is one of the swept thresholds.
"""

import itertools
import time
from dataclasses import dataclass, replace

import numpy as np

from memory_review.assessments.policy import Thresholds

from .sweep import CURVE_VALUES

DECISIONS = ("promote", "review", "reject")
PROMOTE, REVIEW, REJECT = range(3)
GRID: dict[str, tuple[float, ...]] = {
    "supported_min": (0.8, 0.85, 0.9, 0.95),
    "scope_fits_min": (0.8, 0.85, 0.9, 0.95),
    "conflict_max": (0.05, 0.1, 0.15, 0.2),
    "promote_margin": (0.0, 0.02, 0.05),
}
SWEPT = tuple(GRID)


@dataclass(frozen=True)
class PromotionCase:
    id: str
    votes: dict[str, float]  # supported, scope_fits, conflict
    expected: str  # promote | review | reject


@dataclass(frozen=True)
class PromotionScore:
    policy: Thresholds
    strict: int
    false_promotions: int
    reviewed: int
    n: int

    def to_dict(self) -> dict:
        n = self.n or 1
        return {
            "strict": self.strict,
            "false_promotions": self.false_promotions,
            "review_rate": round(self.reviewed / n, 4),
            "strict_rate": round(self.strict / n, 4),
            "n": self.n,
        }


@dataclass(frozen=True)
class PromotionSweep:
    baseline: PromotionScore
    best: PromotionScore | None
    best_without_false_promotions: PromotionScore | None
    combinations: int
    seconds: float


class PromotionCases:
    def __init__(self, cases: list[PromotionCase]):
        self.n = len(cases)
        self.supported = np.array([c.votes["supported"] for c in cases], dtype=np.float64)
        self.scope_fits = np.array([c.votes["scope_fits"] for c in cases], dtype=np.float64)
        self.conflict = np.array([c.votes["conflict"] for c in cases], dtype=np.float64)
        self.expected = np.array([DECISIONS.index(c.expected) for c in cases], dtype=np.int64)

    def decisions(self, policy: Thresholds) -> np.ndarray:
        """decide_promotion() for every case at once."""
        band = policy.promote_margin
        review = self.conflict > policy.conflict_max
        promote = (
            ~review
            & (self.supported >= round(policy.supported_min + band, 9))
            & (self.scope_fits >= round(policy.scope_fits_min + band, 9))
            & (self.conflict <= round(policy.conflict_max - band, 9))
        )
        reject = (
            ~review
            & ~promote
            & (
                (self.supported < round(policy.supported_min - band, 9))
                | (self.scope_fits < round(policy.scope_fits_min - band, 9))
            )
        )
        return np.where(promote, PROMOTE, np.where(reject, REJECT, REVIEW))

    def score(self, policy: Thresholds) -> PromotionScore:
        found = self.decisions(policy)
        return PromotionScore(
            policy=policy,
            strict=int(np.count_nonzero(found == self.expected)),
            false_promotions=int(np.count_nonzero((found == PROMOTE) & (self.expected != PROMOTE))),
            reviewed=int(np.count_nonzero(found == REVIEW)),
            n=self.n,
        )

    def confusion(self, policy: Thresholds) -> dict[tuple[str, str], int]:
        """(expected, decided) -> count."""
        found = self.decisions(policy)
        pairs = np.bincount(self.expected * 3 + found, minlength=9)
        return {(DECISIONS[i // 3], DECISIONS[i % 3]): int(n) for i, n in enumerate(pairs) if n}


def distance(policy: Thresholds, baseline: Thresholds) -> float:
    return sum(abs(getattr(policy, name) - getattr(baseline, name)) for name in SWEPT)


def sweep(cases: list[PromotionCase], baseline: Thresholds, grid=GRID) -> PromotionSweep:
    started = time.perf_counter()
    arrays = PromotionCases(cases)
    base = arrays.score(baseline)
    axes = {name: sorted({*grid[name], getattr(baseline, name)}) for name in SWEPT}
    best = clean = None
    count = 0

    def rank(score: PromotionScore) -> tuple:
        return (-score.strict, score.false_promotions, score.reviewed, distance(score.policy, baseline))

    for values in itertools.product(*axes.values()):
        score = arrays.score(replace(baseline, **dict(zip(axes, values, strict=True))))
        count += 1
        if score.false_promotions <= base.false_promotions and (best is None or rank(score) < rank(best)):
            best = score
        if score.false_promotions == 0 and (clean is None or rank(score) < rank(clean)):
            clean = score
    return PromotionSweep(base, best, clean, count, round(time.perf_counter() - started, 3))


def curve(
    cases: PromotionCases, baseline: Thresholds, name: str, values=CURVE_VALUES
) -> list[PromotionScore]:
    return [cases.score(replace(baseline, **{name: value})) for value in values]
