"""Running sql/oracle/ on Oracle, statement by statement, through python-oracledb's own cursor.

Not through Django's: its Oracle cursor strips one trailing ';' from every statement
(`FormatStylePlaceholderCursor._fix_for_params`), which turns `END memory_ctx_pkg;` into
`END memory_ctx_pkg` and leaves the package INVALID, a compile failure python-oracledb reports
only in `cursor.warning`. Here every PL/SQL unit reaches the driver with its terminator, and after
each CREATE of a unit the warning and USER_ERRORS are read: a unit that did not compile stops the
run, naming the object, the file and the errors. Nothing later runs on a broken base.
"""

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .scripts import statements

# CREATE [OR REPLACE] [EDITIONABLE|NONEDITIONABLE] <kind> [IF NOT EXISTS] [schema.]name
_UNIT = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:NON)?EDITIONABLE\s+)?"
    r"(PACKAGE\s+BODY|PACKAGE|FUNCTION|PROCEDURE|TRIGGER|TYPE\s+BODY|TYPE)\s+"
    r"(?:IF\s+NOT\s+EXISTS\s+)?(?:\"?\w+\"?\.)?\"?(\w+)\"?",
    re.IGNORECASE,
)
_ERRORS = "SELECT line, position, text FROM user_errors WHERE name = :name AND type = :type ORDER BY sequence"


class OracleSetupError(Exception):
    """A statement failed or a unit did not compile. Names the file, the object and Oracle's words."""


@dataclass(frozen=True)
class Unit:
    kind: str  # as USER_ERRORS spells it: PACKAGE BODY, TRIGGER, ...
    name: str


def plsql_unit(statement: str) -> Unit | None:
    """The stored unit a statement creates, if it creates one."""
    match = _UNIT.match(statement)
    if not match:
        return None
    return Unit(" ".join(match.group(1).upper().split()), match.group(2).upper())


def _first_line(statement: str) -> str:
    return statement.strip().splitlines()[0][:120]


def run_statement(cursor, statement: str, *, where: str) -> None:
    """`cursor` is the driver's (python-oracledb), never Django's wrapper."""
    try:
        cursor.execute(statement)
    except Exception as exc:  # oracledb.DatabaseError; the driver is not imported off Oracle
        raise OracleSetupError(f"{where}: {_first_line(statement)!r} failed: {exc}") from exc
    unit = plsql_unit(statement)
    if unit is None:
        return
    warning = getattr(cursor, "warning", None)
    cursor.execute(_ERRORS, name=unit.name, type=unit.kind)
    errors = [f"line {line}:{position} {text.strip()}" for line, position, text in cursor.fetchall()]
    if warning is not None or errors:
        detail = "; ".join(errors) or str(warning)
        raise OracleSetupError(f"{where}: {unit.kind} {unit.name} did not compile: {detail}")


def apply_scripts(
    raw_connection, paths: Iterable[Path], *, report: Callable[[str], None] = lambda line: None
) -> int:
    """Every statement of every script, in order; how many ran. Stops at the first failure."""
    ran = 0
    with raw_connection.cursor() as cursor:
        for path in paths:
            report(f"-- {path.name}")
            for number, statement in enumerate(statements(path.read_text()), start=1):
                run_statement(cursor, statement, where=f"{path.name} statement {number}")
                ran += 1
    return ran
