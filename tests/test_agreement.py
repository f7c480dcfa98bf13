"""Agreement rate and Cohen's kappa, checked against worked examples."""

import pytest

from memory_review.calibration.agreement import agreement, from_counts


def test_kappa_matches_the_textbook_example():
    # Two raters, 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> p_o 0.7, p_e 0.5, kappa 0.4.
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    result = agreement(pairs, order=["yes", "no"])
    assert (result.n, result.agreed, result.rate) == (50, 35, 0.7)
    assert result.kappa == pytest.approx(0.4)
    assert result.matrix == [("yes", [("yes", 20), ("no", 5)]), ("no", [("yes", 10), ("no", 15)])]


def test_perfect_agreement_is_one_and_agreement_by_chance_alone_is_zero():
    assert agreement([("a", "a"), ("b", "b"), ("c", "c")]).kappa == pytest.approx(1.0)
    chance = from_counts({("a", "a"): 25, ("a", "b"): 25, ("b", "a"): 25, ("b", "b"): 25})
    assert chance.kappa == pytest.approx(0.0)


def test_kappa_is_undefined_when_both_always_give_the_same_answer_and_empty_has_no_rate():
    assert agreement([("a", "a")] * 4).kappa is None
    empty = agreement([])
    assert (empty.n, empty.rate, empty.kappa) == (0, None, None)


@pytest.mark.parametrize(
    "kappa, words",
    [(0.8077, "almost perfect agreement"), (0.805, "almost perfect agreement"),
     (0.8049, "substantial agreement"), (0.6049, "moderate agreement"), (0.6051, "substantial agreement"),
     (-0.004, "slight agreement"), (-0.006, "worse than chance")],
)  # fmt: skip
def test_the_word_beside_a_kappa_is_chosen_from_the_value_shown(kappa, words):
    """Shown to two decimals: 0.8077 reads 0.81, so it must read "almost perfect", as 0.81 does."""
    from memory_review.review.templatetags.review import kappa_words

    assert kappa_words(kappa) == words
