"""Threshold sweeps over a labelled set (issue 9): every policy in a grid replayed at once.

`decide()` is the invalidation table for one vote; here the same table runs over all cases as
numpy arrays, once per combination of thresholds, so a grid of thousands of policies over
tens of thousands of cases takes seconds. A test checks, policy by policy, that it agrees with
`replay()` case for case.

The best policy is the one with the best strict accuracy that **adds no false invalidation**:
no more than the baseline (the active policy, or the one given) has on the same cases. Ties go
to fewer false invalidations, then a lower review rate, then the policy closest to the
baseline. The best policy with no false invalidation at all is found too.
"""

import itertools
import time
from dataclasses import dataclass, replace

import numpy as np

from memory_review.assessments.models import Disposition
from memory_review.assessments.policy import Thresholds

from .replay import Case, as_compared

# Disposition codes for the arrays, in a fixed order.
CODES = tuple(Disposition.values)
CODE = {name: i for i, name in enumerate(CODES)}
UNRELATED, DIRECTIVE, HYPOTHETICAL = CODE["unrelated"], CODE["directive"], CODE["hypothetical"]
CONFIRMED, UNCERTAIN, PARTIAL = CODE["confirmed"], CODE["uncertain"], CODE["partial"]
SUPERSEDED, CONTRADICTED = CODE["superseded"], CODE["contradicted"]
# A disposition compared as the label it means for the memory (form checks: left for review).
COMPARED = np.array([CODE[as_compared(name)] for name in CODES])
REVIEWED = np.array([name in (Disposition.UNCERTAIN, Disposition.PARTIAL) for name in CODES])

# The grid searched by default: every threshold of the invalidation table, and the margin.
GRID: dict[str, tuple[float, ...]] = {
    "bears_min": (0.5, 0.6, 0.7),
    "directive_max": (0.6, 0.7, 0.8),
    "hypothetical_max": (0.6, 0.7, 0.8),
    "confirm_min": (0.5, 0.55, 0.6, 0.65),
    "contradict_max": (0.3, 0.35, 0.4, 0.45),
    "partial_min": (0.8, 0.9),
    "replace_min": (0.5, 0.6, 0.7),
    "margin": (0.0, 0.05, 0.1),
}
SWEPT = tuple(GRID)


@dataclass(frozen=True)
class Score:
    policy: Thresholds
    strict: int
    lenient: int
    false_invalidations: int
    reviewed: int
    n: int

    def to_dict(self) -> dict:
        n = self.n or 1
        return {
            "strict": self.strict,
            "lenient": self.lenient,
            "false_invalidations": self.false_invalidations,
            "review_rate": round(self.reviewed / n, 4),
            "strict_rate": round(self.strict / n, 4),
            "lenient_rate": round(self.lenient / n, 4),
            "n": self.n,
        }


@dataclass(frozen=True)
class Sweep:
    baseline: Score
    best: Score | None  # best strict accuracy adding no false invalidation
    best_without_false_invalidations: Score | None
    combinations: int
    seconds: float


def dispositions(votes, policy: Thresholds) -> np.ndarray:
    """decide() over arrays: `votes` has one array per vote name (as attributes), the result one
    disposition code per row (CODES)."""
    out = np.full(votes.bears.shape[0], UNCERTAIN)
    unrelated = votes.bears < policy.bears_min
    directive = ~unrelated & (votes.directive >= policy.directive_max)
    hypothetical = ~unrelated & ~directive & (votes.hypothetical >= policy.hypothetical_max)
    rest = ~(unrelated | directive | hypothetical)
    confirmed = rest & (votes.still_true >= policy.confirm_at)
    kill = rest & ~confirmed & (votes.still_true <= policy.contradict_at)
    partial = kill & (votes.partial >= policy.partial_min)
    superseded = kill & ~partial & (votes.replaces >= policy.replace_min)
    out[unrelated] = UNRELATED
    out[directive] = DIRECTIVE
    out[hypothetical] = HYPOTHETICAL
    out[confirmed] = CONFIRMED
    out[partial] = PARTIAL
    out[superseded] = SUPERSEDED
    out[kill & ~partial & ~superseded] = CONTRADICTED
    return out


class Cases:
    """The labelled set as arrays: one row per case."""

    def __init__(self, cases: list[Case]):
        votes = {name: np.array([c.votes[name] for c in cases], dtype=np.float64) for name in cases[0].votes}
        self.bears, self.directive = votes["bears"], votes["directive"]
        self.hypothetical, self.still_true = votes["hypothetical"], votes["still_true"]
        self.partial, self.replaces = votes["partial"], votes["replaces"]
        self.n = len(cases)
        self.expected = COMPARED[np.array([CODE[c.expected] for c in cases])]
        # acceptable[i, d]: disposition d (compared) is the expected label or a lenient one
        self.acceptable = np.zeros((self.n, len(CODES)), dtype=bool)
        kill_ok = np.zeros(self.n, dtype=bool)
        for i, case in enumerate(cases):
            for label in (case.expected, *case.lenient):
                self.acceptable[i, CODE[as_compared(label)]] = True
                kill_ok[i] |= label in (Disposition.CONTRADICTED, Disposition.SUPERSEDED)
        self.kill_ok = kill_ok
        self.rows = np.arange(self.n)

    def dispositions(self, policy: Thresholds) -> np.ndarray:
        """decide() for every case at once."""
        return dispositions(self, policy)

    def score(self, policy: Thresholds) -> Score:
        found = self.dispositions(policy)
        compared = COMPARED[found]
        killed = (found == SUPERSEDED) | (found == CONTRADICTED)
        return Score(
            policy=policy,
            strict=int(np.count_nonzero(compared == self.expected)),
            lenient=int(np.count_nonzero(self.acceptable[self.rows, compared])),
            false_invalidations=int(np.count_nonzero(killed & ~self.kill_ok)),
            reviewed=int(np.count_nonzero(REVIEWED[found])),
            n=self.n,
        )

    def grid_scores(self, baseline: Thresholds, grid: dict[str, tuple[float, ...]] = GRID):
        """Score every policy of the grid without replaying each: the same counts as `score()`.

        The form checks depend on three thresholds, a kill's kind on two more; what is left
        depends on still_true alone, against the two edges of the review band. So for each form
        and kill setting the cases that reach the band are sorted by still_true once, and each
        outcome's hits are prefix sums: a pair of edges is then two binary searches."""
        axes = _axes(baseline, grid)
        for bears_min, directive_max, hypothetical_max in itertools.product(
            axes["bears_min"], axes["directive_max"], axes["hypothetical_max"]
        ):
            unrelated = self.bears < bears_min
            directive = ~unrelated & (self.directive >= directive_max)
            hypothetical = ~unrelated & ~directive & (self.hypothetical >= hypothetical_max)
            formed = unrelated | directive | hypothetical
            form_codes = np.where(unrelated, UNRELATED, np.where(directive, DIRECTIVE, HYPOTHETICAL))[formed]
            base = self._counts(np.flatnonzero(formed), form_codes)
            rest = np.flatnonzero(~formed)
            order = rest[np.argsort(self.still_true[rest], kind="stable")]
            votes = self.still_true[order]
            confirmed = self._prefix(order, np.full(order.size, CONFIRMED))
            uncertain = self._prefix(order, np.full(order.size, UNCERTAIN))
            for partial_min, replace_min in itertools.product(axes["partial_min"], axes["replace_min"]):
                partial = self.partial[order] >= partial_min
                kinds = np.where(
                    partial, PARTIAL, np.where(self.replaces[order] >= replace_min, SUPERSEDED, CONTRADICTED)
                )
                killed = self._prefix(order, kinds)
                for confirm_min, contradict_max, margin in itertools.product(
                    axes["confirm_min"], axes["contradict_max"], axes["margin"]
                ):
                    if contradict_max > confirm_min:
                        continue
                    policy = replace(
                        baseline,
                        bears_min=bears_min, directive_max=directive_max, hypothetical_max=hypothetical_max,
                        partial_min=partial_min, replace_min=replace_min, confirm_min=confirm_min,
                        contradict_max=contradict_max, margin=margin,
                    )  # fmt: skip
                    # As decide() reads a vote: confirmed from confirm_at up, first; killed at or
                    # below contradict_at among the rest (so a vote on an edge both share confirms).
                    confirm_start = int(np.searchsorted(votes, policy.confirm_at, side="left"))
                    kill_end = min(
                        int(np.searchsorted(votes, policy.contradict_at, side="right")), confirm_start
                    )
                    total = (
                        base
                        + killed[kill_end] - killed[0]
                        + uncertain[confirm_start] - uncertain[kill_end]
                        + confirmed[-1] - confirmed[confirm_start]
                    )  # fmt: skip
                    strict, lenient, false_invalidations, reviewed = (int(x) for x in total)
                    yield Score(policy, strict, lenient, false_invalidations, reviewed, self.n)

    def _counts(self, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """(strict, lenient, false invalidations, reviewed) of these cases given these outcomes."""
        return self._per_case(rows, codes).sum(axis=0)

    def _prefix(self, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Running sums of the four counts along `rows`, with a leading zero row."""
        per_case = self._per_case(rows, codes)
        return np.vstack([np.zeros((1, 4), dtype=np.int64), np.cumsum(per_case, axis=0)])

    def _per_case(self, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
        compared = COMPARED[codes]
        killed = (codes == SUPERSEDED) | (codes == CONTRADICTED)
        return np.column_stack(
            [
                compared == self.expected[rows],
                self.acceptable[rows, compared],
                killed & ~self.kill_ok[rows],
                REVIEWED[codes],
            ]
        ).astype(np.int64)


def policies(baseline: Thresholds, grid: dict[str, tuple[float, ...]] = GRID):
    """Every valid combination of the grid, each threshold's grid with the baseline's own value
    added (so "change nothing" is always a candidate), the baseline's other settings kept."""
    axes = _axes(baseline, grid)
    for values in itertools.product(*axes.values()):
        chosen = dict(zip(axes, values, strict=True))
        if chosen["contradict_max"] > chosen["confirm_min"]:
            continue
        yield replace(baseline, **chosen)


def _axes(baseline: Thresholds, grid: dict[str, tuple[float, ...]]) -> dict[str, list[float]]:
    """Each swept threshold's values: the grid's with the baseline's own added; one the grid
    leaves out keeps the baseline's value."""
    return {name: sorted({*grid.get(name, ()), getattr(baseline, name)}) for name in SWEPT}


def distance(policy: Thresholds, baseline: Thresholds) -> float:
    return sum(abs(getattr(policy, name) - getattr(baseline, name)) for name in SWEPT)


def sweep(cases: list[Case], baseline: Thresholds, grid: dict[str, tuple[float, ...]] = GRID) -> Sweep:
    started = time.perf_counter()
    arrays = Cases(cases)
    base = arrays.score(baseline)
    best = best_clean = None
    count = 0

    def rank(score: Score) -> tuple:
        return (-score.strict, score.false_invalidations, score.reviewed, distance(score.policy, baseline))

    for score in arrays.grid_scores(baseline, grid):
        count += 1
        if score.false_invalidations <= base.false_invalidations and (
            best is None or rank(score) < rank(best)
        ):
            best = score
        if score.false_invalidations == 0 and (best_clean is None or rank(score) < rank(best_clean)):
            best_clean = score
    return Sweep(
        baseline=base,
        best=best,
        best_without_false_invalidations=best_clean,
        combinations=count,
        seconds=round(time.perf_counter() - started, 3),
    )


def sweep_report(result: Sweep) -> dict:
    """One JSON object: the best policy under the keys --policy reads, its counts beside the
    baseline's, and the grid searched."""

    def policy_and_score(score: Score | None) -> dict | None:
        if score is None:
            return None
        return {"policy": score.policy.to_data(), **score.to_dict()}

    return {
        "best": policy_and_score(result.best),
        "baseline": policy_and_score(result.baseline),
        "best_without_false_invalidations": policy_and_score(result.best_without_false_invalidations),
        "grid": {"combinations": result.combinations, "seconds": result.seconds, "thresholds": list(SWEPT)},
    }


# One threshold at a time: the curve a lead reads to see what moving it alone would do.
CURVE_VALUES = tuple(round(i * 0.05, 2) for i in range(21))


def curve(cases: "Cases", baseline: Thresholds, name: str, values=CURVE_VALUES) -> list[Score]:
    """The baseline with `name` set to each value (values that would cross the review band's
    other edge are left out), scored on the labelled set."""
    out = []
    for value in values:
        policy = replace(baseline, **{name: value})
        if policy.contradict_max > policy.confirm_min:
            continue
        out.append(cases.score(policy))
    return out
