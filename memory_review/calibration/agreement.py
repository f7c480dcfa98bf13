"""How often two raters agree, beyond chance (DESIGN §5): the policy and a reviewer, the active
and the shadow policy, or two labelers. Pure: pairs in, numbers out."""

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Agreement:
    n: int
    agreed: int
    kappa: float | None  # None when chance agreement is total (every answer the same): undefined
    rows: tuple[str, ...]  # the first rater's answers, in order
    columns: tuple[str, ...]  # the second rater's
    counts: dict[tuple[str, str], int]

    @property
    def rate(self) -> float | None:
        return self.agreed / self.n if self.n else None

    def cell(self, row: str, column: str) -> int:
        return self.counts.get((row, column), 0)

    @property
    def matrix(self) -> list[tuple[str, list[tuple[str, int]]]]:
        """Each row's answer with (column answer, count) for every column."""
        return [(row, [(column, self.cell(row, column)) for column in self.columns]) for row in self.rows]


def agreement(pairs: Iterable[tuple[str, str]], *, order: Sequence[str] = ()) -> Agreement:
    """Agreement rate and Cohen's kappa over (first, second) answers: kappa = (p_o - p_e) /
    (1 - p_e), p_e from each rater's own answer frequencies. `order` lists answers in the order
    the confusion matrix shows them; answers not in it follow, sorted."""
    return from_counts(Counter(pairs), order=order)


def from_counts(counts: dict[tuple[str, str], int], *, order: Sequence[str] = ()) -> Agreement:
    """The same from a confusion matrix's counts (a database GROUP BY, say)."""
    counts = {pair: count for pair, count in counts.items() if count}
    n = sum(counts.values())
    agreed = sum(count for (a, b), count in counts.items() if a == b)
    first, second = Counter(), Counter()
    for (a, b), count in counts.items():
        first[a] += count
        second[b] += count
    kappa = None
    if n:
        observed = agreed / n
        expected = sum(first[label] * second[label] for label in first) / (n * n)
        kappa = None if expected == 1 else (observed - expected) / (1 - expected)

    def ordered(seen: Iterable[str]) -> tuple[str, ...]:
        seen = set(seen)
        return tuple([label for label in order if label in seen] + sorted(seen - set(order)))

    return Agreement(
        n=n,
        agreed=agreed,
        kappa=kappa,
        rows=ordered(first),
        columns=ordered(second),
        counts=counts,
    )


def fleiss_kappa(items: Iterable[Counter]) -> float | None:
    """Fleiss' kappa over items rated by two people or more, each item a Counter of answer to the
    number of raters who gave it. Items may have different numbers of raters: each item's
    agreement is P_i = sum(n_ij (n_ij - 1)) / (n_i (n_i - 1)), chance agreement P_e = sum(p_j^2)
    with p_j each answer's share of all ratings. None with no item, or when chance agreement is
    total (every rating the same answer)."""
    items = [item for item in items if sum(item.values()) >= 2]
    if not items:
        return None
    totals: Counter = Counter()
    observed = 0.0
    for item in items:
        n = sum(item.values())
        observed += sum(count * (count - 1) for count in item.values()) / (n * (n - 1))
        totals.update(item)
    observed /= len(items)
    ratings = sum(totals.values())
    expected = sum((count / ratings) ** 2 for count in totals.values())
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)
