"""`manage.py calibrate FILE [--policy POLICY.json] [--json] [--sweep]`: replay a labelled set
(DESIGN §5), or sweep a grid of thresholds over it for the best policy that adds no false
invalidation (calibration/sweep.py)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory_review.assessments.policy import DEFAULTS, Thresholds
from memory_review.calibration.replay import ReplayError, Report, Tally, load_cases, load_policy, replay
from memory_review.calibration.sweep import sweep as run_sweep
from memory_review.calibration.sweep import sweep_report
from memory_review.params import Unreadable, json_loads

FALSE_INVALIDATION = "<< FALSE INVALIDATION"
ZERO = "·"  # a dot rather than 0 lets the filled cells of the matrix stand out


class Command(BaseCommand):
    help = (
        "Replay a JSONL replay set through the invalidation policy and print each case's "
        "disposition, strict and lenient accuracy, false invalidations, a per-category table "
        "and the confusion matrix."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="replay set, JSONL, one case per line")
        parser.add_argument("--policy", metavar="POLICY.json", help="thresholds; missing keys take defaults")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the report as JSON")
        parser.add_argument(
            "--sweep",
            action="store_true",
            help="search the threshold grid for the best strict accuracy with no more false invalidations "
            "than the policy given (or the default one)",
        )

    def handle(
        self,
        *args,
        file: str,
        policy: str | None = None,
        as_json: bool = False,
        sweep: bool = False,
        **options,
    ):
        try:
            cases = load_cases(_read_text(file).splitlines(), filename=file)
            thresholds = load_policy(_read_json(policy), filename=policy) if policy else DEFAULTS
        except ReplayError as error:
            raise CommandError(str(error)) from error
        if sweep:
            if not cases:
                raise CommandError(f"{file} has no cases to sweep over")
            found = sweep_report(run_sweep(cases, thresholds))
            self.stdout.write(json.dumps(found, indent=None if as_json else 2, ensure_ascii=False))
            return
        report = replay(cases, thresholds)
        if as_json:
            self.stdout.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        else:
            self.stdout.write(render_text(report, file=file, policy_file=policy))


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise CommandError(f"{path} is not UTF-8 text: {error.reason} at byte {error.start}") from error


def _read_json(path: str) -> object:
    try:
        return json_loads(_read_text(path))
    except Unreadable as error:
        raise CommandError(f"{path}: invalid JSON ({error})") from error
    except json.JSONDecodeError as error:
        raise CommandError(f"{path}: invalid JSON ({error.msg} at line {error.lineno})") from error


# --- text report ---------------------------------------------------------------------------


def render_text(report: Report, *, file: str, policy_file: str | None) -> str:
    sections = [
        _heading(report, file=file, policy_file=policy_file),
        _case_table(report),
        _totals(report),
        "By category\n" + _category_table(report),
        "Confusion matrix (rows: expected, columns: disposition)\n" + _confusion_table(report),
    ]
    return "\n\n".join(sections)


def _heading(report: Report, *, file: str, policy_file: str | None) -> str:
    return (
        f"Replay of {file}: {report.totals.n} cases, {_describe_policy(report.policy, policy_file)}\n"
        "hypothetical and directive count as uncertain; "
        f"{FALSE_INVALIDATION} marks a kill no labeler accepted"
    )


def _describe_policy(policy: Thresholds, policy_file: str | None) -> str:
    if policy_file is None:
        return "default policy"
    defaults = DEFAULTS.to_data()
    changed = [f"{key}={value}" for key, value in policy.to_data().items() if value != defaults[key]]
    return f"policy {policy_file} ({', '.join(changed) if changed else 'same as defaults'})"


def _case_table(report: Report) -> str:
    header = ["id", "category", "expected", "disposition", "strict", "lenient", ""]
    rows = [
        [
            r.id,
            r.category,
            r.expected,
            r.disposition,
            _mark(r.strict_ok),
            _mark(r.lenient_ok),
            FALSE_INVALIDATION if r.false_invalidation else "",
        ]
        for r in report.results
    ]
    return _table(header, rows)


def _totals(report: Report) -> str:
    line = _summary(report.totals)
    if report.false_invalidations:
        ids = ", ".join(f"{r.id} ({r.category})" for r in report.false_invalidations)
        line += f"\nfalse invalidations: {ids}"
    return line


def _summary(tally: Tally) -> str:
    return (
        f"strict {_rate(tally.strict, tally.n)}, lenient {_rate(tally.lenient, tally.n)}, "
        f"false invalidations {tally.false_invalidations}"
    )


def _category_table(report: Report) -> str:
    header = ["category", "n", "strict", "lenient", "false invalidations"]
    rows = [
        [name, str(t.n), _rate(t.strict, t.n), _rate(t.lenient, t.n), str(t.false_invalidations)]
        for name, t in report.by_category.items()
    ]
    return _table(header, rows, right={1, 2, 3, 4})


def _confusion_table(report: Report) -> str:
    labels = report.confusion.labels
    header = ["expected \\ disposition", *labels]
    rows = [
        [expected, *(str(count) if count else ZERO for count in counts)]
        for expected, counts in zip(labels, report.confusion.rows(), strict=True)
    ]
    return _table(header, rows, right=set(range(1, len(header))))


def _rate(hits: int, n: int) -> str:
    return f"{hits / n:.1%} ({hits}/{n})" if n else "n/a"


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _table(header: list[str], rows: list[list[str]], *, right: set[int] = frozenset()) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
