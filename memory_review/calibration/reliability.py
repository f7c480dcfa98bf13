"""How well calibrated a question's probabilities are against people's labels (DESIGN §5): a
reliability table (binned, with n per bin and the bin scheme), expected calibration error and
Brier score. Pure: (probability, happened) pairs in, numbers out.

Which labels say a question's answer was "yes" is written down in `TRUTH`, per question, with
the labels that say nothing about it left out (a "can't tell" says nothing about `still_true`).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from memory_review.assessments.models import Disposition

from .labeling import CONFLICT, OUT_OF_SCOPE, PROMOTE, UNSUPPORTED

BINS = 10
SCHEME = f"{BINS} equal-width bins over [0, 1]; a probability of exactly 1 falls in the last"

_D = Disposition
_KILLED = (_D.PARTIAL, _D.SUPERSEDED, _D.CONTRADICTED)
# question -> (the gold outcomes it is asked of, the ones among them where the answer is yes)
TRUTH: dict[str, tuple[frozenset[str] | None, frozenset[str]]] = {
    "bears": (None, frozenset(v for v in _D.values if v != _D.UNRELATED)),
    "still_true": (frozenset({_D.CONFIRMED, *_KILLED}), frozenset({_D.CONFIRMED})),
    "replaces": (frozenset({_D.SUPERSEDED, _D.CONTRADICTED}), frozenset({_D.SUPERSEDED})),
    "partial": (frozenset(_KILLED), frozenset({_D.PARTIAL})),
    "hypothetical": (None, frozenset({_D.HYPOTHETICAL})),
    "directive": (None, frozenset({_D.DIRECTIVE})),
    # A label names one reason: "wrong scope" says nothing of support, "unsupported" nothing of
    # scope, "conflict" nothing of either.
    "supported": (frozenset({PROMOTE, UNSUPPORTED}), frozenset({PROMOTE})),
    "scope_fits": (frozenset({PROMOTE, OUT_OF_SCOPE}), frozenset({PROMOTE})),
    "conflict": (None, frozenset({CONFLICT})),
}
VERDICT_QUESTIONS = ("bears", "still_true", "replaces", "partial", "hypothetical", "directive")
CANDIDATE_QUESTIONS = ("supported", "scope_fits", "conflict")
# Said on the page beside each diagram, so a reader knows what "observed" counts.
MEANING = {
    "bears": "the event bears on the memory: any label but unrelated",
    "still_true": "still true: labeled still true, out of those labeled still true, partly changed, "
    "superseded or contradicted",
    "replaces": "replaced: labeled superseded, out of those labeled superseded or contradicted",
    "partial": "partly changed: labeled partly changed, out of those labeled partly changed, superseded "
    "or contradicted",
    "hypothetical": "the event is hypothetical: labeled so, out of every label",
    "directive": "the event is an instruction: labeled so, out of every label",
    "supported": "the source supports it: labeled promote, out of those labeled promote or unsupported",
    "scope_fits": "the scope fits: labeled promote, out of those labeled promote or wrong scope",
    "conflict": "it conflicts with a memory: labeled conflict",
}


def outcome_for(question: str, gold: str) -> bool | None:
    """Whether the labels say yes to this question; None when the label says nothing about it."""
    asked, yes = TRUTH[question]
    if asked is not None and gold not in asked:
        return None
    return gold in yes


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    n: int
    mean_p: float | None  # the mean probability given in the bin
    observed: float | None  # the share that was yes

    @property
    def gap(self) -> float | None:
        return None if self.n == 0 else abs(self.observed - self.mean_p)


@dataclass(frozen=True)
class Reliability:
    question: str
    n: int
    bins: list[Bin]
    ece: float | None  # sum over bins of n_b / n * |observed_b - mean_p_b|
    brier: float | None  # mean of (p - y)^2

    @property
    def meaning(self) -> str:
        return MEANING.get(self.question, "")


def reliability(question: str, pairs: Iterable[tuple[float, bool]], *, bins: int = BINS) -> Reliability:
    sums = [[0, 0.0, 0] for _ in range(bins)]  # n, sum of p, yes
    squared = 0.0
    n = 0
    for p, yes in pairs:
        index = min(int(p * bins), bins - 1)
        row = sums[index]
        row[0] += 1
        row[1] += p
        row[2] += int(yes)
        squared += (p - int(yes)) ** 2
        n += 1
    table = [
        Bin(
            low=i / bins,
            high=(i + 1) / bins,
            n=count,
            mean_p=total / count if count else None,
            observed=yes / count if count else None,
        )
        for i, (count, total, yes) in enumerate(sums)
    ]
    ece = sum(b.n / n * b.gap for b in table if b.n) if n else None
    return Reliability(question=question, n=n, bins=table, ece=ece, brier=squared / n if n else None)
