"""`manage.py calibrate`: replaying a labelled set through a policy and scoring it (DESIGN §5)."""

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory_review.calibration.replay import Case, load_cases, replay

EXAMPLE_SET = Path(__file__).resolve().parents[1] / "bench" / "replay_sets" / "example.jsonl"


def votes(**overrides: float) -> dict[str, float]:
    """A bearing, statement-shaped event with an undecided still_true; tests move one vote."""
    base = {
        "bears": 0.9,
        "still_true": 0.5,
        "replaces": 0.1,
        "partial": 0.1,
        "hypothetical": 0.02,
        "directive": 0.01,
    }
    return {**base, **overrides}


def case(id: str, expected: str, *, category: str = "test", lenient=(), source: str = "", **vote_overrides):
    return {
        "id": id,
        "votes": votes(**vote_overrides),
        "source": source,
        "category": category,
        "expected": expected,
        "lenient": list(lenient),
    }


# Hand-scored under the default policy (confirm >= 0.65, kill <= 0.35, replaces >= 0.60):
#   a  superseded,   expected superseded                   strict, lenient
#   b  contradicted, expected superseded (+contradicted)   lenient only
#   c  contradicted, expected confirmed (+uncertain)       false invalidation
#   d  hypothetical, expected uncertain                    strict, lenient
#   e  unrelated,    expected unrelated                    strict, lenient
#   f  uncertain,    expected confirmed                    miss
HAND_SET = [
    case("a", "superseded", category="supersede", still_true=0.05, replaces=0.9),
    case("b", "superseded", category="supersede", lenient=["contradicted"], still_true=0.1, replaces=0.4),
    case("c", "confirmed", category="outage-one-off", lenient=["uncertain"], still_true=0.2),
    case("d", "uncertain", category="hypothetical", hypothetical=0.9),
    case("e", "unrelated", category="unrelated", bears=0.3),
    case("f", "confirmed", category="confirm", still_true=0.62),
]


def hand_report():
    return replay(load_cases(json.dumps(c) for c in HAND_SET))


def write_lines(tmp_path: Path, lines: list[str], name: str = "set.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_set(tmp_path: Path, cases: list[dict]) -> Path:
    return write_lines(tmp_path, [json.dumps(c) for c in cases])


def write_policy(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def calibrate(*args: str) -> str:
    out = StringIO()
    call_command("calibrate", *args, stdout=out)
    return out.getvalue()


def calibrate_json(*args: str) -> dict:
    return json.loads(calibrate(*args, "--json"))


def dispositions(report: dict) -> dict[str, str]:
    return {c["id"]: c["disposition"] for c in report["cases"]}


# --- metrics -------------------------------------------------------------------------------


def test_it_scores_a_hand_computed_set():
    report = hand_report()

    assert [r.disposition for r in report.results] == [
        "superseded",
        "contradicted",
        "contradicted",
        "hypothetical",
        "unrelated",
        "uncertain",
    ]
    assert (report.totals.n, report.totals.strict, report.totals.lenient) == (6, 3, 4)
    assert report.totals.false_invalidations == 1
    assert [r.id for r in report.false_invalidations] == ["c"]


def test_it_breaks_the_scores_down_by_category():
    by_category = hand_report().by_category

    assert list(by_category) == ["confirm", "hypothetical", "outage-one-off", "supersede", "unrelated"]
    supersede = by_category["supersede"]
    assert (supersede.n, supersede.strict, supersede.lenient, supersede.false_invalidations) == (2, 1, 2, 0)
    outage = by_category["outage-one-off"]
    assert (outage.n, outage.strict, outage.lenient, outage.false_invalidations) == (1, 0, 0, 1)


def test_it_builds_the_confusion_matrix_in_disposition_order():
    confusion = hand_report().confusion

    assert confusion.labels == (
        "unrelated",
        "hypothetical",
        "confirmed",
        "superseded",
        "contradicted",
        "uncertain",
    )
    assert confusion.cell("superseded", "superseded") == 1
    assert confusion.cell("superseded", "contradicted") == 1
    assert confusion.cell("confirmed", "contradicted") == 1
    assert confusion.cell("confirmed", "uncertain") == 1
    assert confusion.cell("uncertain", "hypothetical") == 1
    assert confusion.cell("confirmed", "confirmed") == 0
    assert sum(map(sum, confusion.rows())) == 6


@pytest.mark.parametrize("vote", ["hypothetical", "directive"])
def test_it_counts_a_question_or_a_command_as_uncertain(vote):
    cases = load_cases([json.dumps(case("q", "uncertain", still_true=0.05, **{vote: 0.9}))])

    (result,) = replay(cases).results

    assert result.disposition == vote
    assert result.strict_ok and result.lenient_ok
    assert not result.false_invalidation


def test_it_accepts_uncertain_where_the_labeler_expected_hypothetical():
    cases = load_cases([json.dumps(case("q", "hypothetical", hypothetical=0.66))])

    (result,) = replay(cases).results

    assert result.disposition == "uncertain"
    assert result.strict_ok


def test_a_kill_of_the_other_kind_is_not_a_false_invalidation_when_one_kill_is_expected():
    cases = load_cases([json.dumps(case("k", "superseded", still_true=0.1, replaces=0.2))])

    (result,) = replay(cases).results

    assert result.disposition == "contradicted"
    assert not (result.strict_ok or result.lenient_ok or result.false_invalidation)


def test_it_skips_blank_lines_and_defaults_source_and_category():
    line = json.dumps({"id": "x", "votes": votes(), "expected": "uncertain"})

    (loaded,) = load_cases(["", line, "   "])

    assert loaded == Case(id="x", votes=votes(), expected="uncertain", source="", category="uncategorized")


# --- policy files --------------------------------------------------------------------------


def test_a_policy_file_raising_confirm_min_leaves_a_near_threshold_confirmation_for_review(tmp_path):
    replay_set = write_set(tmp_path, [case("near", "confirmed", still_true=0.66)])
    stricter = write_policy(tmp_path, {"confirm_min": 0.62})

    assert dispositions(calibrate_json(str(replay_set))) == {"near": "confirmed"}
    assert dispositions(calibrate_json(str(replay_set), "--policy", str(stricter))) == {"near": "uncertain"}


def test_replay_scores_the_policys_own_disposition_whatever_the_source(tmp_path):
    """A review-only source changes what is done (a flag, when transitioning), never what the
    policy said: calibration must see that the thresholds called this a kill."""
    kills = [
        case("forum", "uncertain", source="community_forum", still_true=0.1),
        case("crm", "contradicted", source="crm", still_true=0.1),
    ]
    replay_set = write_set(tmp_path, kills)
    policy = write_policy(tmp_path, {"review_only_sources": ["community_forum"]})

    report = calibrate_json(str(replay_set), "--policy", str(policy))

    assert dispositions(report) == {"forum": "contradicted", "crm": "contradicted"}
    assert report["totals"]["false_invalidations"] == 1  # forum: labelled uncertain, the policy killed


def test_a_policy_file_with_an_unknown_key_names_the_key_and_the_file(tmp_path):
    replay_set = write_set(tmp_path, HAND_SET)
    policy = write_policy(tmp_path, {"confirm_mn": 0.7})

    with pytest.raises(CommandError, match=r"policy\.json: unknown policy key\(s\): confirm_mn"):
        calibrate(str(replay_set), "--policy", str(policy))


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{not json", "invalid JSON"),
        ("[0.7]", "JSON object"),
        ('{"confirm_min": 1.5}', "confirm_min must be a number in [0, 1]"),
        ('{"review_only_sources": "slack"}', "review_only_sources must be a list"),
    ],
)
def test_a_bad_policy_file_is_an_error_naming_the_file(tmp_path, text, problem):
    replay_set = write_set(tmp_path, HAND_SET)
    policy = tmp_path / "policy.json"
    policy.write_text(text, encoding="utf-8")

    with pytest.raises(CommandError) as raised:
        calibrate(str(replay_set), "--policy", str(policy))

    assert "policy.json" in str(raised.value)
    assert problem in str(raised.value)


# --- bad replay sets -----------------------------------------------------------------------


def without(key: str) -> dict:
    bad = case("c2", "uncertain")
    del bad[key]
    return bad


def with_votes(**changes) -> dict:
    bad = case("c2", "uncertain")
    bad["votes"] = {name: value for name, value in {**bad["votes"], **changes}.items() if value is not None}
    return bad


BAD_SECOND_LINES = {
    "invalid JSON": '{"id": "c2", "votes": ',
    "missing 'id'": json.dumps(without("id")),
    "missing 'votes'": json.dumps(without("votes")),
    "missing 'expected'": json.dumps(without("expected")),
    "missing vote(s) 'replaces', 'partial'": json.dumps(with_votes(replaces=None, partial=None)),
    "vote 'bears' must be a number in [0, 1], got 'high'": json.dumps(with_votes(bears="high")),
    "vote 'still_true' must be a number in [0, 1], got 1.2": json.dumps(with_votes(still_true=1.2)),
    "vote 'partial' must be a number in [0, 1], got -0.1": json.dumps(with_votes(partial=-0.1)),
    "vote 'directive' must be a number in [0, 1], got True": json.dumps(with_votes(directive=True)),
    "unknown vote 'relevance'": json.dumps(with_votes(relevance=0.5)),
    "expected 'stale' is not a disposition": json.dumps(case("c2", "stale")),
    "lenient entry 'maybe' is not a disposition": json.dumps(case("c2", "uncertain", lenient=["maybe"])),
    "duplicate id 'c1' (first on line 1)": json.dumps(case("c1", "uncertain")),
    "unknown key 'lenent'": json.dumps({**case("c2", "uncertain"), "lenent": ["confirmed"]}),
}


@pytest.mark.parametrize("problem, second_line", BAD_SECOND_LINES.items(), ids=list(BAD_SECOND_LINES))
def test_a_bad_case_is_an_error_naming_its_line_and_nothing_is_printed(tmp_path, problem, second_line):
    replay_set = write_lines(tmp_path, [json.dumps(case("c1", "uncertain")), second_line])
    out = StringIO()

    with pytest.raises(CommandError) as raised:
        call_command("calibrate", str(replay_set), stdout=out)

    assert f"set.jsonl line 2: {problem}" in str(raised.value)
    assert out.getvalue() == ""


def test_it_reports_every_bad_line_at_once(tmp_path):
    replay_set = write_lines(
        tmp_path, ["{", "", json.dumps(case("ok", "uncertain")), json.dumps(without("id"))]
    )

    with pytest.raises(CommandError) as raised:
        calibrate(str(replay_set))

    assert re.findall(r"line (\d+)", str(raised.value)) == ["1", "4"]


def test_an_empty_replay_set_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="no cases"):
        calibrate(str(write_lines(tmp_path, ["", "  "])))


def test_a_missing_replay_set_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        calibrate(str(tmp_path / "absent.jsonl"))


# --- output --------------------------------------------------------------------------------


def test_the_text_report_shows_each_case_the_totals_and_the_tables(tmp_path):
    text = calibrate(str(write_set(tmp_path, HAND_SET)))

    assert "strict 50.0% (3/6), lenient 66.7% (4/6), false invalidations 1" in text
    (line_c,) = [line for line in text.splitlines() if line.startswith("c ")]
    assert line_c.split()[:5] == ["c", "outage-one-off", "confirmed", "contradicted", "✗"]
    assert "FALSE INVALIDATION" in line_c
    assert "By category" in text
    assert "Confusion matrix (rows: expected, columns: disposition)" in text


def test_json_output_parses_and_matches_the_text_totals(tmp_path):
    replay_set = str(write_set(tmp_path, HAND_SET))

    totals = calibrate_json(replay_set)["totals"]
    text = calibrate(replay_set)

    strict, lenient, false_invalidations = re.search(
        r"strict ([\d.]+)% .*, lenient ([\d.]+)% .*, false invalidations (\d+)", text
    ).groups()
    assert (totals["n"], totals["strict"], totals["lenient"]) == (6, 3, 4)
    assert f"{totals['strict_rate']:.1%}" == f"{strict}%"
    assert f"{totals['lenient_rate']:.1%}" == f"{lenient}%"
    assert totals["false_invalidations"] == int(false_invalidations)


def test_json_output_carries_categories_and_the_confusion_matrix(tmp_path):
    report = calibrate_json(str(write_set(tmp_path, HAND_SET)))

    assert report["categories"]["supersede"]["strict"] == 1
    confusion = report["confusion"]
    row = confusion["matrix"][confusion["labels"].index("confirmed")]
    assert row[confusion["labels"].index("contradicted")] == 1


def test_the_example_replay_set_runs_and_is_not_perfect():
    report = calibrate_json(str(EXAMPLE_SET))

    totals = report["totals"]
    assert totals["n"] >= 40
    assert 0 < totals["strict_rate"] < totals["lenient_rate"] < 1
    assert totals["false_invalidations"] >= 1
    assert "strict" in calibrate(str(EXAMPLE_SET))
