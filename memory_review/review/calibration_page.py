"""What the calibration page shows (issue 9, item 2), gathered for its template: the labelled set
(or an imported replay set) scored under the active policy, each question's reliability with
its chart, one-threshold curves, and the grid sweep's answer. The charts are laid out here, as
SVG (charts.py), and kept with the numbers they draw."""

from dataclasses import dataclass
from urllib.parse import urlencode

from memory_review.assessments.models import PolicyVersion
from memory_review.assessments.policy import Thresholds
from memory_review.assessments.reassessment import redecided_count
from memory_review.calibration import evidence, figures, labeling, promotion_sweep, sweep
from memory_review.calibration.models import ReplaySet
from memory_review.calibration.replay import load_cases

from . import charts


@dataclass
class Chart:
    title: str
    plot: charts.Plot
    rows: list  # the numbers beside it


def build(tenant, policy: Thresholds, *, replay_set: ReplaySet | None = None, labeled_by=None) -> dict:
    """`labeled_by`: a blind labeler, whose page counts only the items they labeled themselves."""
    if replay_set is not None:
        cases = load_cases(replay_set.content.splitlines(), filename=replay_set.name)
        invalidation = evidence.invalidation(tenant, policy, cases=cases)
    else:
        invalidation = evidence.invalidation(tenant, policy, labeled_by=labeled_by)
    promotion = evidence.promotion(tenant, policy, labeled_by=labeled_by)
    reliabilities = evidence.reliabilities(invalidation.cases, promotion.pairs)
    return {
        "invalidation": invalidation,
        "promotion": promotion,
        "reliabilities": [(r, charts.reliability_chart(r)) for r in reliabilities],
        "curves": [
            _curve(name, scores, policy, INVALIDATION_SERIES) for name, scores in invalidation.curves.items()
        ],
        "promotion_curves": [
            _curve(name, scores, policy, PROMOTION_SERIES) for name, scores in promotion.curves.items()
        ],
        "promotion_confusion": _promotion_matrix(promotion.confusion),
        "confusion_rows": list(
            zip(invalidation.report.confusion.labels, invalidation.report.confusion.rows(), strict=True)
        )
        if invalidation.report
        else [],
        "compare": _compare_links(invalidation.sweep, promotion.sweep),
        "grid_rows": _grid_rows(
            sweep.SWEPT,
            policy,
            invalidation.sweep
            and (invalidation.sweep.best, invalidation.sweep.best_without_false_invalidations),
        ),
        "promotion_grid_rows": _grid_rows(
            promotion_sweep.SWEPT,
            policy,
            promotion.sweep and (promotion.sweep.best, promotion.sweep.best_without_false_promotions),
        ),
    }


def _grid_rows(names, policy: Thresholds, found) -> list[tuple]:
    """(threshold, active value, best's value, best-without-any's value), a found value None when
    the sweep found no such policy."""
    if not found:
        return []
    best, clean = found
    return [
        (
            name,
            getattr(policy, name),
            best and getattr(best.policy, name),
            clean and getattr(clean.policy, name),
        )
        for name in names
    ]


def _compare_links(found: sweep.Sweep | None, promoted: promotion_sweep.PromotionSweep | None) -> dict:
    """Query strings for the compare page, one per policy the sweeps found."""
    picks = {
        "best": (found.best if found else None, "sweep: best strict adding no false invalidation"),
        "clean": (
            found.best_without_false_invalidations if found else None,
            "sweep: best with no false invalidation",
        ),
        "promotion": (promoted.best if promoted else None, "promotion sweep: best adding no false promotion"),
    }
    return {key: _query(score.policy, origin) for key, (score, origin) in picks.items() if score is not None}


def _query(policy: Thresholds, origin: str) -> str:
    values = {name: value for name, value in policy.to_data().items() if name != "review_only_sources"}
    return urlencode({**values, "origin": origin})


# The curves' series: (legend, the score's count), as shares of the labelled cases.
INVALIDATION_SERIES = (
    ("strict", "strict"), ("lenient", "lenient"), ("false invalidations", "false_invalidations"),
    ("review rate", "reviewed"),
)  # fmt: skip
PROMOTION_SERIES = (
    ("strict", "strict"),
    ("false promotions", "false_promotions"),
    ("review rate", "reviewed"),
)


def _curve(name: str, scores: list, policy: Thresholds, series: tuple[tuple[str, str], ...]) -> Chart:
    """One threshold's curve: the chart, and per value the counts behind it."""
    values = [getattr(s.policy, name) for s in scores]
    n = scores[0].n if scores else 1
    counts = {label: [getattr(s, count) for s in scores] for label, count in series}
    rows = [(v, *(getattr(s, count) for _, count in series)) for v, s in zip(values, scores, strict=True)]
    return Chart(name, charts.curve_chart(name, values, counts, n, getattr(policy, name)), rows)


def _promotion_matrix(confusion: dict[tuple[str, str], int]) -> list[tuple[str, list[int]]]:
    return [
        (expected, [confusion.get((expected, decided), 0) for decided in promotion_sweep.DECISIONS])
        for expected in promotion_sweep.DECISIONS
    ]


@figures.figure("calibration", standing=True)
def kept_build(tenant, *, replay_set: int | None = None, labeled_by: int | None = None) -> dict:
    """build() under the active policy, as calibration/figures.py keeps it (ids, not rows: the
    job that computes it gets JSON)."""
    _, policy = labeling.active_policy(tenant)
    chosen = ReplaySet.objects.for_tenant(tenant).get(pk=replay_set) if replay_set else None
    return build(tenant, policy, replay_set=chosen, labeled_by=labeled_by)


@figures.figure("redecided", standing=True, rests_on=(*figures.COUNTED, "moves"))
def redecided_summary(tenant) -> dict:
    """The policies page's count of live memories the active policy would decide otherwise, and
    the first 50 of them: every live memory's latest vote, so kept (a memory moving changes it)."""
    count, first = redecided_count(tenant, PolicyVersion.objects.for_tenant(tenant).active(), first=50)
    return {"count": count, "first": first}
