"""Reading the hand-written Oracle scripts in sql/oracle/ into statements python-oracledb runs."""

import re
from pathlib import Path

from django.conf import settings

SQL_DIR = Path(settings.BASE_DIR) / "sql" / "oracle"
GENERATED = "010_schema.sql"
GRANTS = "050_grants.sql"  # rendered too, but applied with the hand-written scripts
_PLSQL = re.compile(
    r"^\s*(BEGIN|DECLARE|CREATE\s+(OR\s+REPLACE\s+)?(PACKAGE|FUNCTION|PROCEDURE|TRIGGER|TYPE))\b",
    re.IGNORECASE,
)


def script_paths() -> list[Path]:
    """The hand-written scripts, in the order they run (the generated schema is `migrate`'s)."""
    return sorted(p for p in SQL_DIR.glob("*.sql") if p.name != GENERATED)


def statements(text: str) -> list[str]:
    """Split a script on lines holding only '/', as SQL*Plus does.

    PL/SQL blocks keep their final ';'; plain SQL statements lose it (oracledb wants none).
    """
    out = []
    for chunk in re.split(r"^\s*/\s*$", text, flags=re.MULTILINE):
        body = "\n".join(
            line for line in chunk.strip().splitlines() if not line.lstrip().startswith("--")
        ).strip()
        if not body:
            continue
        if not _PLSQL.match(body):
            body = body.rstrip(";").rstrip()
        out.append(body)
    return out
