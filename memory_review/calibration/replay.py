"""Replay labelled votes through a policy and score it (DESIGN §5). Pure: no I/O, no printing.

A replay set is JSONL, one case per line:

    {"id": "c1", "votes": {"bears": 0.9, ...}, "source": "slack", "category": "supersede",
     "expected": "superseded", "lenient": ["contradicted"]}

`event`, `memory` and `note` may carry free text for the people reading the set; replay
ignores them. Any other key is an error, so a misspelt `lenient` cannot silently change
the scores.

Metrics follow the reference evaluation (seeds/003):
strict = the disposition equals `expected`; lenient = it is in `{expected} + lenient`;
false invalidation = it is contradicted or superseded while neither is acceptable.
`hypothetical` and `directive` count as `uncertain` on both sides of every comparison: they
are logged and never written, so for the memory they mean "left for review".
"""

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from memory_review.assessments.models import Disposition, Verdict
from memory_review.assessments.policy import DEFAULTS, Thresholds, decide
from memory_review.params import Unreadable, json_loads

VOTE_NAMES: tuple[str, ...] = Verdict.VOTE_NAMES
DISPOSITIONS: tuple[str, ...] = tuple(Disposition.values)
KILLS = frozenset({Disposition.CONTRADICTED.value, Disposition.SUPERSEDED.value})
LEFT_FOR_REVIEW = frozenset({Disposition.HYPOTHETICAL.value, Disposition.DIRECTIVE.value})
REQUIRED_KEYS = ("id", "votes", "expected")
OPTIONAL_KEYS = ("source", "category", "lenient")
DESCRIPTIVE_KEYS = ("event", "memory", "note")
DEFAULT_CATEGORY = "uncategorized"
# A file that is wrong everywhere should not bury the first problems under thousands more.
MAX_REPORTED_PROBLEMS = 20


class ReplayError(ValueError):
    """A replay set or policy that cannot be replayed; `problems` holds one message per problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:MAX_REPORTED_PROBLEMS]
        hidden = len(problems) - len(shown)
        if hidden:
            shown = [*shown, f"... and {hidden} more problem(s)"]
        super().__init__("\n".join(shown))


@dataclass(frozen=True)
class Case:
    id: str
    votes: dict[str, float]
    expected: str
    source: str = ""
    category: str = DEFAULT_CATEGORY
    lenient: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseResult:
    id: str
    category: str
    source: str
    expected: str
    lenient: tuple[str, ...]
    disposition: str
    strict_ok: bool
    lenient_ok: bool
    false_invalidation: bool


@dataclass
class Tally:
    n: int = 0
    strict: int = 0
    lenient: int = 0
    false_invalidations: int = 0

    def add(self, result: CaseResult) -> None:
        self.n += 1
        self.strict += result.strict_ok
        self.lenient += result.lenient_ok
        self.false_invalidations += result.false_invalidation

    @property
    def strict_rate(self) -> float:
        return self.strict / self.n if self.n else 0.0

    @property
    def lenient_rate(self) -> float:
        return self.lenient / self.n if self.n else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "strict_rate": self.strict_rate, "lenient_rate": self.lenient_rate}


@dataclass(frozen=True)
class Confusion:
    """Expected (rows) x disposition (columns), raw labels, in `Disposition` order.

    Raw rather than mapped so a labeler sees which form check fired; a `hypothetical` under an
    `uncertain` row is still a strict hit.
    """

    labels: tuple[str, ...]
    counts: Counter

    def cell(self, expected: str, disposition: str) -> int:
        return self.counts[(expected, disposition)]

    def rows(self) -> list[list[int]]:
        return [[self.cell(e, d) for d in self.labels] for e in self.labels]

    def to_dict(self) -> dict:
        return {
            "labels": list(self.labels),
            "rows": "expected",
            "columns": "disposition",
            "matrix": self.rows(),
        }


@dataclass
class Report:
    policy: Thresholds
    results: list[CaseResult]
    totals: Tally
    by_category: dict[str, Tally]
    confusion: Confusion

    @property
    def false_invalidations(self) -> list[CaseResult]:
        return [r for r in self.results if r.false_invalidation]

    def to_dict(self) -> dict:
        return {
            "policy": self.policy.to_data(),
            "totals": self.totals.to_dict(),
            "categories": {name: tally.to_dict() for name, tally in self.by_category.items()},
            "confusion": self.confusion.to_dict(),
            "cases": [{**asdict(r), "lenient": list(r.lenient)} for r in self.results],
        }


# --- loading -------------------------------------------------------------------------------


def load_cases(lines: Iterable[str], *, filename: str = "replay set") -> list[Case]:
    """Parse a JSONL replay set; every problem found is reported, each naming its line."""
    cases: list[Case] = []
    problems: list[str] = []
    first_line_of: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        case, line_problems = _parse_line(line)
        if case is not None and case.id in first_line_of:
            line_problems.append(f"duplicate id {case.id!r} (first on line {first_line_of[case.id]})")
        problems += [f"{filename} line {number}: {problem}" for problem in line_problems]
        if case is not None and not line_problems:
            first_line_of[case.id] = number
            cases.append(case)
    if problems:
        raise ReplayError(problems)
    if not cases:
        raise ReplayError([f"{filename}: no cases (the file is empty or only blank lines)"])
    return cases


def load_policy(data: object, *, filename: str = "policy") -> Thresholds:
    """Thresholds from policy JSON; missing keys take their defaults."""
    if not isinstance(data, dict):
        raise ReplayError([f"{filename}: a policy must be a JSON object of threshold names to values"])
    try:
        return Thresholds.from_data(data)
    except ValueError as error:
        raise ReplayError([f"{filename}: {error}"]) from error


def _parse_line(line: str) -> tuple[Case | None, list[str]]:
    try:
        data = json_loads(line)
    except Unreadable as error:  # 100,000 brackets or a 5,000-digit integer: never parsed whole
        return None, [f"invalid JSON ({error})"]
    except json.JSONDecodeError as error:
        return None, [f"invalid JSON ({error.msg} at column {error.colno})"]
    if not isinstance(data, dict):
        return None, ["a case must be a JSON object"]
    problems = _key_problems(data)
    if problems:
        return None, problems
    problems = [
        *_id_problems(data["id"]),
        *_vote_problems(data["votes"]),
        *_label_problems(data),
        *_text_problems(data),
    ]
    if problems:
        return None, problems
    case = Case(
        id=data["id"],
        votes={name: float(data["votes"][name]) for name in VOTE_NAMES},
        expected=data["expected"],
        source=data.get("source", ""),
        category=data.get("category") or DEFAULT_CATEGORY,
        lenient=tuple(data.get("lenient", ())),
    )
    return case, []


def _key_problems(data: dict) -> list[str]:
    problems = [f"missing {key!r}" for key in REQUIRED_KEYS if key not in data]
    known = {*REQUIRED_KEYS, *OPTIONAL_KEYS, *DESCRIPTIVE_KEYS}
    problems += [f"unknown key {key!r}" for key in sorted(set(data) - known)]
    return problems


def _id_problems(case_id: object) -> list[str]:
    if not isinstance(case_id, str) or not case_id.strip():
        return [f"'id' must be a non-empty string, got {case_id!r}"]
    return []


def _vote_problems(votes: object) -> list[str]:
    if not isinstance(votes, dict):
        return [f"'votes' must be an object with {', '.join(VOTE_NAMES)}"]
    missing = [repr(name) for name in VOTE_NAMES if name not in votes]
    problems = [f"missing vote(s) {', '.join(missing)}"] if missing else []
    problems += [f"unknown vote {name!r}" for name in sorted(set(votes) - set(VOTE_NAMES))]
    for name in VOTE_NAMES:
        if name in votes and not _is_probability(votes[name]):
            problems.append(f"vote {name!r} must be a number in [0, 1], got {votes[name]!r}")
    return problems


def _is_probability(value: object) -> bool:
    # bool is an int in Python, and json accepts NaN; neither is a vote.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and 0 <= value <= 1


def _label_problems(data: dict) -> list[str]:
    problems = []
    if data["expected"] not in DISPOSITIONS:
        problems.append(f"expected {data['expected']!r} is not a disposition ({', '.join(DISPOSITIONS)})")
    lenient = data.get("lenient", [])
    if not isinstance(lenient, list):
        return [*problems, f"'lenient' must be a list of dispositions, got {lenient!r}"]
    problems += [
        f"lenient entry {label!r} is not a disposition ({', '.join(DISPOSITIONS)})"
        for label in lenient
        if label not in DISPOSITIONS
    ]
    return problems


def _text_problems(data: dict) -> list[str]:
    return [
        f"{key!r} must be a string, got {data[key]!r}"
        for key in ("source", "category", *DESCRIPTIVE_KEYS)
        if key in data and not isinstance(data[key], str)
    ]


# --- scoring -------------------------------------------------------------------------------


def replay(cases: Iterable[Case], policy: Thresholds = DEFAULTS) -> Report:
    results = [score(case, decide(case.votes, policy=policy)) for case in cases]
    totals = Tally()
    by_category: dict[str, Tally] = {}
    for result in results:
        totals.add(result)
        by_category.setdefault(result.category, Tally()).add(result)
    return Report(
        policy=policy,
        results=results,
        totals=totals,
        by_category=dict(sorted(by_category.items())),
        confusion=_confusion(results),
    )


def score(case: Case, disposition: str) -> CaseResult:
    acceptable = {case.expected, *case.lenient}
    compared = as_compared(disposition)
    return CaseResult(
        id=case.id,
        category=case.category,
        source=case.source,
        expected=case.expected,
        lenient=case.lenient,
        disposition=str(disposition),
        strict_ok=compared == as_compared(case.expected),
        lenient_ok=compared in {as_compared(label) for label in acceptable},
        false_invalidation=disposition in KILLS and not (acceptable & KILLS),
    )


def as_compared(disposition: str) -> str:
    """The label used for comparison: form checks leave the memory for review."""
    if disposition in LEFT_FOR_REVIEW:
        return Disposition.UNCERTAIN.value
    return disposition


def _confusion(results: list[CaseResult]) -> Confusion:
    occurring = {r.expected for r in results} | {r.disposition for r in results}
    return Confusion(
        labels=tuple(label for label in DISPOSITIONS if label in occurring),
        counts=Counter((r.expected, r.disposition) for r in results),
    )
