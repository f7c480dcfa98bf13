"""Reliability (ECE, Brier), promotion calibration with its dead band, and the labelled set as a
replay set: the same cases the page scores are the ones `manage.py calibrate` reads back."""

import itertools
import json
import random
from dataclasses import replace

import pytest
from django.core.management import call_command

from memory_review.assessments.policy import DEFAULTS, decide_promotion
from memory_review.calibration import evidence, labeling, promotion_sweep
from memory_review.calibration.labeling import ItemRef
from memory_review.calibration.reliability import outcome_for, reliability
from memory_review.calibration.replay import load_cases, replay
from tests.factories import judged, make_memory


def test_reliability_bins_ece_and_brier_by_hand():
    pairs = [(0.05, False), (0.15, False), (0.15, True), (0.95, True), (1.0, True)]
    found = reliability("still_true", pairs)
    assert [b.n for b in found.bins] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert found.bins[1].mean_p == pytest.approx(0.15) and found.bins[1].observed == 0.5
    # ECE: (1 * |0 - 0.05| + 2 * |0.5 - 0.15| + 2 * |1 - 0.975|) / 5
    assert found.ece == pytest.approx((0.05 + 0.7 + 0.05) / 5)
    # Brier: mean of (p - y)^2
    assert found.brier == pytest.approx((0.05**2 + 0.15**2 + 0.85**2 + 0.05**2 + 0) / 5)
    empty = reliability("bears", [])
    assert (empty.n, empty.ece, empty.brier) == (0, None, None)


def test_which_labels_say_yes_to_which_question():
    assert outcome_for("still_true", "confirmed") is True
    assert outcome_for("still_true", "superseded") is False
    assert outcome_for("still_true", "uncertain") is None  # "can't tell" says nothing about it
    assert outcome_for("replaces", "superseded") is True and outcome_for("replaces", "partial") is None
    assert outcome_for("bears", "unrelated") is False and outcome_for("bears", "directive") is True
    assert outcome_for("supported", "promote") is True and outcome_for("supported", "unsupported") is False
    assert outcome_for("supported", "out_of_scope") is None  # a label names one reason
    assert outcome_for("conflict", "conflict") is True and outcome_for("scope_fits", "out_of_scope") is False


def test_the_dead_band_sends_close_calls_to_review_and_zero_keeps_the_plain_rule():
    banded = replace(DEFAULTS, promote_margin=0.05)
    assert decide_promotion({"supported": 0.89, "scope_fits": 0.95, "conflict": 0.0}) == "reject"
    assert decide_promotion({"supported": 0.90, "scope_fits": 0.95, "conflict": 0.0}) == "promote"
    assert (
        decide_promotion({"supported": 0.89, "scope_fits": 0.95, "conflict": 0.0}, policy=banded) == "review"
    )
    assert (
        decide_promotion({"supported": 0.92, "scope_fits": 0.95, "conflict": 0.0}, policy=banded) == "review"
    )
    assert (
        decide_promotion({"supported": 0.95, "scope_fits": 0.95, "conflict": 0.05}, policy=banded)
        == "promote"
    )
    assert (
        decide_promotion({"supported": 0.84, "scope_fits": 0.95, "conflict": 0.0}, policy=banded) == "reject"
    )
    assert (
        decide_promotion({"supported": 0.99, "scope_fits": 0.99, "conflict": 0.2}, policy=banded) == "review"
    )


def test_promotion_arrays_agree_with_decide_promotion_for_every_grid_policy():
    rng = random.Random(7)
    grid = [0.0, 0.05, 0.1, 0.85, 0.9, 0.95, 1.0]
    cases = [
        promotion_sweep.PromotionCase(
            str(i),
            {
                "supported": rng.choice(grid + [rng.random()]),
                "scope_fits": rng.choice(grid + [rng.random()]),
                "conflict": rng.choice(grid + [rng.random()]),
            },
            rng.choice(promotion_sweep.DECISIONS),
        )  # fmt: skip
        for i in range(300)
    ]
    arrays = promotion_sweep.PromotionCases(cases)
    axes = promotion_sweep.GRID
    for values in itertools.islice(itertools.product(*axes.values()), 0, None, 7):
        policy = replace(DEFAULTS, **dict(zip(axes, values, strict=True)))
        found = arrays.decisions(policy)
        assert [promotion_sweep.DECISIONS[code] for code in found] == [
            decide_promotion(case.votes, policy=policy) for case in cases
        ]


def test_the_promotion_sweep_finds_a_policy_adding_no_false_promotion():
    # Labelers promote what is well supported even at 0.85; the default 0.90 rejects those.
    cases = [
        promotion_sweep.PromotionCase(
            f"p{i}", {"supported": 0.86, "scope_fits": 0.97, "conflict": 0.01}, "promote"
        )
        for i in range(6)
    ] + [
        promotion_sweep.PromotionCase(
            f"r{i}", {"supported": 0.4, "scope_fits": 0.97, "conflict": 0.01}, "reject"
        )
        for i in range(4)
    ]
    found = promotion_sweep.sweep(cases, DEFAULTS)
    assert (found.baseline.strict, found.baseline.false_promotions) == (4, 0)
    assert (found.best.strict, found.best.false_promotions) == (10, 0)
    assert found.best.policy.supported_min <= 0.85 and found.combinations >= 192


@pytest.mark.django_db
def test_the_exported_replay_set_is_what_the_page_scores_and_calibrate_reads(
    acme, policy, labeler, tmp_path, capsys, monkeypatch
):
    votes = [
        (0.9, 0.1, "confirmed"),
        (0.2, 0.8, "superseded"),
        (0.2, 0.1, "contradicted"),
        (0.5, 0.1, "uncertain"),
    ]
    for still_true, replaces, outcome in votes:
        item = judged(make_memory(acme), policy, still_true=still_true, replaces=replaces)
        labeling.record(
            acme, labeler, ItemRef("verdict", item.pk), outcome=outcome, alternatives=["uncertain"]
        )
    lines = list(evidence.replay_set_lines(acme))
    assert len(lines) == 4 and all(line.endswith("\n") for line in lines)
    monkeypatch.setattr(evidence, "REPLAY_CHUNK", 3)  # read in chunks, the same set comes out
    assert list(evidence.replay_set_lines(acme)) == lines
    first = json.loads(lines[0])
    assert set(first) == {"id", "votes", "source", "category", "expected", "lenient", "memory", "event"}

    loaded = load_cases(lines)
    page = evidence.invalidation(acme, DEFAULTS)
    assert loaded == page.cases
    path = tmp_path / "set.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    call_command("calibrate", str(path), "--json")
    printed = json.loads(capsys.readouterr().out)
    assert (
        printed["totals"] == replay(loaded, DEFAULTS).to_dict()["totals"] == page.report.to_dict()["totals"]
    )
