"""The error-rate estimator (issue 31, item 2), checked by simulation: over thousands of populations
with known rates, drawn from without replacement as the sampled audits draw, the 95% intervals
cover the truth at least 94% of the time, for a stratum's 20 labels and up and for the stratified
estimate over strata of very different sizes."""

import numpy as np
import pytest
from scipy import stats

from memory_review.quality.estimates import (
    Estimate,
    Stratum,
    clopper_pearson,
    difference,
    hypergeometric,
    labels_needed,
    stratified_estimate,
    stratum_estimate,
)

RUNS = 1000


def drawn(rng, population: int, rate: float, sampled: int) -> tuple[int, float]:
    """A population of `population` items with round(rate * population) wrong, and how many wrong
    a draw of `sampled` without replacement finds: (wrong found, the true rate)."""
    wrong = round(rate * population)
    return int(rng.hypergeometric(wrong, population - wrong, sampled)), wrong / population


@pytest.mark.parametrize("sampled", [20, 50, 200])
@pytest.mark.parametrize("times", [2, 500], ids=["sample half its stratum", "sample 1 in 500"])
def test_a_strata_interval_covers_the_true_rate_at_least_94_percent_of_the_time(sampled, times):
    rng = np.random.default_rng(sampled * times)
    population = sampled * times
    covered = 0
    for _ in range(RUNS):
        found, truth = drawn(rng, population, rng.uniform(0.0, 0.5), sampled)
        estimate = stratum_estimate(Stratum(("s",), population, sampled, found))
        covered += estimate.low <= truth <= estimate.high

    print(f"{sampled} labels of {population}: {covered / RUNS:.1%} covered")
    assert covered / RUNS >= 0.94


@pytest.mark.parametrize("sampled", [20, 50])
@pytest.mark.parametrize("most", [0.05, 0.3], ids=["rare errors", "common errors"])
def test_the_stratified_interval_covers_the_populations_true_rate_at_least_94_percent_of_the_time(
    sampled, most
):
    rng = np.random.default_rng(round(sampled / most))
    covered = 0
    for _ in range(RUNS):
        sizes = rng.integers(100, 300_000, size=6)  # skewed: some strata thousands of times larger
        rates = rng.uniform(0.0, most, size=6)
        strata, wrong_in_all = [], 0
        for n, (size, rate) in enumerate(zip(sizes, rates, strict=True)):
            found, truth = drawn(rng, int(size), float(rate), sampled)
            strata.append(Stratum((n,), int(size), sampled, found))
            wrong_in_all += round(truth * size)
        estimate = stratified_estimate(strata)
        covered += estimate.low <= wrong_in_all / sizes.sum() <= estimate.high

    print(f"6 strata of {sampled} labels, rates up to {most}: {covered / RUNS:.1%} covered")
    assert covered / RUNS >= 0.94


def test_clopper_pearson_gives_the_textbook_bounds():
    assert clopper_pearson(0, 20) == (0.0, pytest.approx(1 - 0.025 ** (1 / 20)))  # 0.168
    assert clopper_pearson(20, 20) == (pytest.approx(0.025 ** (1 / 20)), 1.0)
    low, high = clopper_pearson(3, 50)
    assert (low, high) == (
        pytest.approx(stats.beta.ppf(0.025, 3, 48)),
        pytest.approx(stats.beta.ppf(0.975, 4, 47)),
    )


@pytest.mark.parametrize(
    ("wrong", "sampled", "population"), [(0, 20, 30), (3, 20, 60), (10, 25, 40), (25, 25, 25)]
)
def test_the_finite_population_interval_is_scipys_hypergeometric_one_and_narrower(wrong, sampled, population):
    tail, counts = 0.025, np.arange(population + 1)
    possible = counts[
        (stats.hypergeom.cdf(wrong, population, counts, sampled) > tail)
        & (stats.hypergeom.sf(wrong - 1, population, counts, sampled) > tail)
    ]

    low, high = hypergeometric(wrong, sampled, population)

    assert (low, high) == (possible.min() / population, possible.max() / population)
    wide_low, wide_high = clopper_pearson(wrong, sampled)
    assert wide_low <= low and high <= wide_high


def test_a_whole_stratum_labeled_is_known_exactly():
    estimate = stratum_estimate(Stratum(("all",), 40, 40, 6))

    assert (estimate.rate, estimate.low, estimate.high) == (0.15, 0.15, 0.15)


def test_the_stratified_rate_weights_strata_by_their_population_and_counts_wrong_items():
    big = Stratum(("email", "preference"), 900_000, 100, 10)  # 10%
    small = Stratum(("chat", "fact"), 100_000, 100, 50)  # 50%

    estimate = stratified_estimate([big, small])

    assert estimate.rate == pytest.approx(0.9 * 0.10 + 0.1 * 0.50)  # 14%, not the labels' 30%
    assert estimate.low < 0.14 < estimate.high
    assert estimate.wrong_items[0] == 140_000
    assert estimate.wrong_items[1] <= 140_000 <= estimate.wrong_items[2]


def test_nothing_labeled_is_no_estimate_and_an_unlabeled_stratum_is_not_guessed():
    assert stratified_estimate([Stratum(("a",), 1000, 0, 0)]).rate is None
    assert stratum_estimate(Stratum(("a",), 1000, 0, 0)).wrong_items is None

    estimate = stratified_estimate([Stratum(("a",), 1000, 50, 5), Stratum(("b",), 1000, 0, 0)])
    assert estimate.rate == pytest.approx(0.10) and estimate.population == 2000


def test_a_later_period_is_worse_beyond_chance_only_when_the_difference_interval_clears_zero():
    def period(wrong: int) -> Estimate:
        return stratified_estimate([Stratum(("email",), 50_000, 400, wrong)])

    assert difference(period(12), period(40)).worse  # 3% to 10%
    assert not difference(period(12), period(16)).worse  # 3% to 4%: within chance
    assert not difference(period(40), period(12)).worse  # better
    assert difference(period(12), stratified_estimate([Stratum(("email",), 50_000, 0, 0)])) is None


def test_labels_needed_for_a_precision():
    assert labels_needed(0.03, 10_000_000) == 1067  # 1.96^2 / 4 / 0.03^2 = 1,067.1, corrected for 10M
    assert labels_needed(0.03, 2000) == 697  # finite-population corrected
    assert labels_needed(0.05, 30) == 28
    assert labels_needed(0.03, 0) == 0
    with pytest.raises(ValueError, match=r"precision must be between 0 and 1 \(0.03 is \+-3 points\), got 3"):
        labels_needed(3, 1000)


def test_a_stratum_that_cannot_be_is_refused_by_name():
    with pytest.raises(ValueError, match=r"stratum \('email',\): needs 0 <= wrong \(5\) <= sampled \(4\)"):
        Stratum(("email",), 100, 4, 5)


def test_no_label_wrong_over_many_strata_gives_a_narrow_interval_not_zero_to_one():
    """Korn and Graubard take n* = n when no label is wrong: one-label strata's variance once
    made p(1 - p) / var zero there, and the channel with 82 right labels read 0%-100%."""
    strata = [Stratum((k,), 10, 1, 0) for k in range(20)] + [Stratum(("big",), 500, 62, 0)]
    found = stratified_estimate(strata)
    assert found.rate == 0 and found.low == 0 and found.high == pytest.approx(1 - 0.025 ** (1 / 82))


def test_no_label_wrong_in_a_huge_stratum_with_one_label_stays_wide():
    """A tiny, well-labeled stratum must not make a huge one with a single label look precise."""
    found = stratified_estimate([Stratum(("A",), 1_000_000, 1, 0), Stratum(("B",), 10_000, 82, 0)])
    assert found.rate == 0 and found.high > 0.9
