"""How wrong the memory is, estimated from sampled audits, with intervals that keep their word
(issue 31, item 2).

A population (the memories in force that no person reviewed, or a period's automatic decisions)
is split into strata (agent, channel, kind, decision). Stratum h holds N_h items; n_h of them were
drawn at random, without replacement, and labeled by people, x_h of them wrong.

* **A stratum's rate** is x_h / n_h, with the Clopper-Pearson interval: the exact binomial one,
  whose coverage is at least its confidence for every true rate, however small the count (Wilson's
  dips below it near 0 with twenty labels). Drawing without replacement only narrows the spread,
  so the binomial interval stays conservative; where the sample is more than 5% of its stratum the
  finite-population correction matters, and the interval is the exact one for sampling without
  replacement: the hypergeometric interval for the stratum's count of wrong items, over N_h.
* **The population's rate** is the strata's rates weighted by their share of it, sum W_h p_h with
  W_h = N_h / N, with the stratified variance (each stratum's with its finite-population
  correction) and Korn and Graubard's interval (1998): Clopper-Pearson at the effective sample
  size n* = p(1 - p) / var, at most the labels' count, and that count when no label or every label
  is wrong (Korn, E. L. and Graubard, B. I., "Confidence intervals for proportions with small
  expected number of positive counts estimated from survey data", Survey Methodology 24, 1998).
* **A regression**: a later period's rate is worse beyond chance when the interval for the
  difference of the two rates lies wholly above zero. The interval is Newcombe's, built from the
  two periods' own intervals (the MOVER method: Newcombe 1998, method 10; Zou and Donner 2008),
  so it inherits their behaviour at small counts where a z-test on the difference does not.

tests/test_quality_estimates.py checks the coverage by simulation: over thousands of populations
with known rates, the 95% intervals cover the truth at least 94% of the time, for strata of 20
labels and up."""

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

CONFIDENCE = 0.95
# Above this share of its stratum, a sample's interval is the hypergeometric one (exact without
# replacement); below it, the binomial one differs from it by less than the labels can tell.
FINITE_ABOVE = 0.05


@dataclass(frozen=True)
class Stratum:
    key: tuple
    population: int  # N_h: items in the stratum
    sampled: int  # n_h: drawn and labeled
    wrong: int  # x_h: labeled wrong

    def __post_init__(self):
        if not 0 <= self.wrong <= self.sampled <= self.population:
            raise ValueError(
                f"stratum {self.key}: needs 0 <= wrong ({self.wrong}) <= sampled ({self.sampled}) "
                f"<= population ({self.population})"
            )


@dataclass(frozen=True)
class Estimate:
    rate: float | None  # None: nothing labeled yet
    low: float
    high: float
    population: int
    sampled: int
    wrong: int

    @property
    def wrong_items(self) -> tuple[int, int, int] | None:
        """How many of the population's items are wrong: the estimate, and its interval."""
        if self.rate is None:
            return None
        n = self.population
        return round(self.rate * n), math.floor(self.low * n), math.ceil(self.high * n)


def clopper_pearson(wrong: float, sampled: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact binomial interval; `wrong` and `sampled` may be effective (fractional) counts."""
    if sampled <= 0:
        return 0.0, 1.0
    tail = (1 - confidence) / 2
    # The beta distribution's quantiles (scipy.stats.beta.ppf is this, at a hundred times the cost).
    low = 0.0 if wrong <= 0 else float(special.betaincinv(wrong, sampled - wrong + 1, tail))
    high = 1.0 if wrong >= sampled else float(special.betaincinv(wrong + 1, sampled - wrong, 1 - tail))
    return low, high


def hypergeometric(
    wrong: int, sampled: int, population: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The exact interval for the share of wrong items in a finite population of which `sampled`
    were drawn without replacement: every count K of wrong items the sample does not rule out at
    the tails' level (P(X <= x | K) and P(X >= x | K) both above it), over `population`.

    Only the counts inside the binomial interval are tried (drawing without replacement spreads
    less, so it holds the exact one), each tail summed from log-gamma terms in one array: scipy's
    hypergeom took 10 ms a stratum where this takes a fraction of one."""
    tail = (1 - confidence) / 2
    wide_low, wide_high = clopper_pearson(wrong, sampled, confidence)
    counts = np.arange(
        max(wrong, math.floor(wide_low * population)),
        min(population - sampled + wrong, math.ceil(wide_high * population)) + 1,
    )
    at_most = _hypergeom_cdf(wrong, population, counts, sampled)  # P(X <= x | K)
    at_least = 1 - _hypergeom_cdf(wrong - 1, population, counts, sampled)  # P(X >= x | K)
    # Strictly above the level, as the interval is defined; a tail exactly at it (3/120 = 0.025)
    # stays out however the log-gamma sums round it.
    edge = tail * (1 + 1e-9)
    possible = counts[(at_most > edge) & (at_least > edge)]
    if not len(possible):  # rounding at the edges of a one-count interval
        return wrong / sampled, wrong / sampled
    return float(possible.min()) / population, float(possible.max()) / population


def _log_choose(n, k):
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def _hypergeom_cdf(x: int, population: int, counts: np.ndarray, sampled: int) -> np.ndarray:
    """P(X <= x) for each count of wrong items in `counts`, X the wrong items among `sampled`
    drawn without replacement from `population`."""
    if x < 0:
        return np.zeros(len(counts))
    if x >= sampled:
        return np.ones(len(counts))
    drawn = np.arange(x + 1)[None, :]
    wrong = counts[:, None]
    possible = (drawn <= wrong) & (sampled - drawn <= population - wrong)
    with np.errstate(invalid="ignore"):
        terms = np.where(
            possible,
            _log_choose(wrong, drawn)
            + _log_choose(population - wrong, sampled - drawn)
            - _log_choose(population, sampled),
            -np.inf,
        )
    return np.minimum(1.0, np.exp(special.logsumexp(terms, axis=1)))


def stratum_estimate(stratum: Stratum, confidence: float = CONFIDENCE) -> Estimate:
    n, x, big_n = stratum.sampled, stratum.wrong, stratum.population
    if n == 0:
        return Estimate(None, 0.0, 1.0, big_n, 0, 0)
    if n > FINITE_ABOVE * big_n:
        low, high = hypergeometric(x, n, big_n, confidence)
    else:
        low, high = clopper_pearson(x, n, confidence)
    return Estimate(x / n, low, high, big_n, n, x)


def stratified_estimate(strata: Iterable[Stratum], confidence: float = CONFIDENCE) -> Estimate:
    """The population's rate from its strata, with Korn and Graubard's interval. A stratum with
    no labels yet counts in the population but not in the estimate, which then speaks for the
    labeled strata only: `covered` on the result's strata says how much of it that is."""
    strata = list(strata)
    population = sum(s.population for s in strata)
    labeled = [s for s in strata if s.sampled > 0]
    sampled, wrong = sum(s.sampled for s in labeled), sum(s.wrong for s in labeled)
    if not labeled:
        return Estimate(None, 0.0, 1.0, population, 0, 0)
    covered = sum(s.population for s in labeled)
    rate, variance, design = 0.0, 0.0, 0.0
    for s in labeled:
        share, p = s.population / covered, s.wrong / s.sampled
        rate += share * p
        kept = 1 - s.sampled / s.population  # the finite-population correction
        design += share**2 * kept / s.sampled
        if s.sampled > 1:
            variance += share**2 * kept * p * (1 - p) / (s.sampled - 1)
        else:  # one label says nothing of its spread: the most a rate can have, p(1 - p) <= 1/4
            variance += share**2 * kept * 0.25
    if variance > 0 and 0 < rate < 1:
        effective = min(rate * (1 - rate) / variance, sampled)
    elif design > 0:
        # Every label right (or every label wrong): p(1 - p) / var is 0 there. Kish's effective
        # size, 1 / sum(W_h^2 (1 - f_h) / n_h), as many as were labeled when the strata were
        # labeled in proportion, about one when a huge stratum has a single label.
        effective = min(1 / design, sampled)
    else:  # whole strata labeled: nothing left to estimate
        effective = sampled
    low, high = clopper_pearson(rate * effective, effective, confidence)
    return Estimate(rate, low, high, population, sampled, wrong)


@dataclass(frozen=True)
class Difference:
    change: float  # later minus earlier
    low: float
    high: float

    @property
    def worse(self) -> bool:
        """Worse beyond chance: the whole interval lies above no change."""
        return self.low > 0


def difference(earlier: Estimate, later: Estimate) -> Difference | None:
    """Newcombe's MOVER interval for later - earlier, from the two estimates' own intervals."""
    if earlier.rate is None or later.rate is None:
        return None
    change = later.rate - earlier.rate
    low = change - math.hypot(later.rate - later.low, earlier.high - earlier.rate)
    high = change + math.hypot(later.high - later.rate, earlier.rate - earlier.low)
    return Difference(change, low, high)


def labels_needed(
    precision: float, population: int, confidence: float = CONFIDENCE, expected: float = 0.5
) -> int:
    """Labels a stratum of `population` needs for its rate to be known to within +-`precision`
    at `confidence`: the normal approximation's n0 = z^2 p(1-p) / e^2, finite-population corrected
    (n0 / (1 + (n0 - 1) / N)), with p = `expected` (0.5, the most a rate can need, when nothing is
    known yet). Never more than the population."""
    if population <= 0:
        return 0
    return share_of(population, labels_for_an_endless_population(precision, confidence, expected))


def share_of(size: int, first: float, scale: float = 1.0) -> int:
    """n0 / (1 + (n0 - 1) / N) for a stratum of `size` (written n0 N / (N + n0 - 1), as the draw's
    SQL compares it), times `scale` when a draw's strata together need more than its budget,
    rounded up: never less than one nor more than the stratum."""
    return min(size, math.ceil(scale * first * size / (size + first - 1)))


def labels_for_an_endless_population(
    precision: float, confidence: float = CONFIDENCE, expected: float = 0.5
) -> float:
    """n0 = z^2 p(1-p) / e^2, before the finite-population correction."""
    if not 0 < precision < 1:
        raise ValueError(f"precision must be between 0 and 1 (0.03 is +-3 points), got {precision}")
    z = float(stats.norm.ppf(1 - (1 - confidence) / 2))
    return z * z * expected * (1 - expected) / (precision * precision)
