"""The threshold sweep: the array replay agrees with replay() case for case, the best policy
adds no false invalidation, and `calibrate --sweep --json` prints one object."""

import json
import random

from django.core.management import call_command

from memory_review.assessments.models import Disposition
from memory_review.assessments.policy import DEFAULTS, Thresholds
from memory_review.calibration.replay import Case, replay
from memory_review.calibration.sweep import GRID, Cases, policies, sweep

VOTES = ("bears", "still_true", "replaces", "partial", "hypothetical", "directive")
LABELS = [d for d in Disposition.values if d not in ("expired", "no_source")]


def random_cases(n: int, seed: int = 7) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        votes = {name: round(rng.random(), 2) for name in VOTES}
        expected = rng.choice(LABELS)
        lenient = tuple(rng.sample(LABELS, k=rng.choice((0, 0, 1))))
        cases.append(Case(id=f"c{i}", votes=votes, expected=expected, lenient=lenient))
    return cases


def test_the_array_replay_agrees_with_replay_for_every_case_and_policy():
    cases = random_cases(400)
    arrays = Cases(cases)
    some = random.Random(3).sample(list(policies(DEFAULTS)), 40) + [DEFAULTS]
    for policy in some:
        report = replay(cases, policy)
        score = arrays.score(policy)
        assert [r.disposition for r in report.results] == [
            Disposition.values[d] for d in arrays.dispositions(policy)
        ], policy
        assert (score.strict, score.lenient, score.false_invalidations) == (
            report.totals.strict,
            report.totals.lenient,
            report.totals.false_invalidations,
        ), policy


def test_the_best_policy_adds_no_false_invalidation_and_is_at_least_as_accurate():
    cases = random_cases(600)
    baseline = replay(cases, DEFAULTS).totals

    result = sweep(cases, DEFAULTS)

    assert result.combinations >= 3600
    assert result.best.false_invalidations <= baseline.false_invalidations
    assert result.best.strict >= baseline.strict
    clean = result.best_without_false_invalidations  # None: no policy in the grid avoids them all
    assert clean is None or clean.false_invalidations == 0
    again = replay(cases, result.best.policy).totals  # the figures are replay()'s own
    assert (again.strict, again.false_invalidations) == (result.best.strict, result.best.false_invalidations)


def test_the_grid_covers_every_threshold_of_the_table_and_the_margin():
    assert set(GRID) == {
        "bears_min", "directive_max", "hypothetical_max", "confirm_min", "contradict_max",
        "partial_min", "replace_min", "margin",
    }  # fmt: skip
    assert all(p.contradict_max <= p.confirm_min for p in policies(DEFAULTS))


def test_calibrate_sweep_json_prints_one_object_the_policy_option_reads_back(tmp_path, capsys):
    path = tmp_path / "set.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"id": c.id, "votes": c.votes, "expected": c.expected, "lenient": list(c.lenient)})
            for c in random_cases(200)
        )
    )

    call_command("calibrate", str(path), "--sweep", "--json")
    report = json.loads(capsys.readouterr().out)

    assert set(report) == {"best", "baseline", "best_without_false_invalidations", "grid"}
    assert report["best"]["false_invalidations"] <= report["baseline"]["false_invalidations"]
    Thresholds.from_data(report["best"]["policy"])  # the keys --policy reads
    policy_file = tmp_path / "best.json"
    policy_file.write_text(json.dumps(report["best"]["policy"]))
    call_command("calibrate", str(path), "--policy", str(policy_file), "--json")
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["totals"]["strict"] == report["best"]["strict"]


def test_labels_the_default_policy_agrees_with_give_it_back_as_best_with_no_false_invalidation():
    cases = random_cases(300)
    agreed = replay(cases, DEFAULTS).results
    labelled = [
        Case(id=c.id, votes=c.votes, expected=r.disposition) for c, r in zip(cases, agreed, strict=True)
    ]

    result = sweep(labelled, DEFAULTS)

    assert result.baseline.strict == len(labelled) and result.baseline.false_invalidations == 0
    assert result.best.strict == len(labelled) and result.best.false_invalidations == 0
    assert result.best.policy == DEFAULTS  # ties go to the policy closest to the baseline


def test_the_fast_grid_scores_equal_replaying_each_policy_of_the_grid():
    cases = random_cases(150, seed=5)
    arrays = Cases(cases)

    fast = list(arrays.grid_scores(DEFAULTS))

    assert len(fast) == len(list(policies(DEFAULTS)))
    for score in fast:
        exact = arrays.score(score.policy)
        assert (score.strict, score.lenient, score.false_invalidations, score.reviewed) == (
            exact.strict,
            exact.lenient,
            exact.false_invalidations,
            exact.reviewed,
        ), score.policy


# Edges where the review band closes (confirm_min == contradict_max, margin 0) and votes that lie
# exactly on an edge: decide() confirms a vote on the shared edge, and the sweep must too.
EDGE_GRID = {
    **{name: (values[0],) for name, values in GRID.items()},
    "confirm_min": (0.4, 0.5),
    "contradict_max": (0.4, 0.5),
    "margin": (0.0, 0.05),
}


def cases_on_the_edges(n: int, seed: int = 11) -> list[Case]:
    rng = random.Random(seed)
    on_edges = (0.35, 0.4, 0.45, 0.5, 0.55)
    cases = random_cases(n, seed)
    for case in cases:
        case.votes["still_true"] = rng.choice(on_edges)
        case.votes["bears"] = max(case.votes["bears"], 0.9)
        case.votes["directive"] = case.votes["hypothetical"] = 0.0
    return cases


def test_the_fast_grid_agrees_with_replay_on_every_edge_even_where_the_review_band_closes():
    cases = cases_on_the_edges(200)
    arrays = Cases(cases)

    scores = list(arrays.grid_scores(DEFAULTS, EDGE_GRID))

    assert any(s.policy.confirm_min == s.policy.contradict_max and s.policy.margin == 0 for s in scores)
    for score in scores:
        totals = replay(cases, score.policy).totals
        assert (score.strict, score.lenient, score.false_invalidations) == (
            totals.strict,
            totals.lenient,
            totals.false_invalidations,
        ), score.policy
