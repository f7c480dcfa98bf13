"""What reaches python-oracledb when apply_oracle_sql runs, checked without a server: every
PL/SQL unit keeps its terminator (Django's Oracle cursor would strip it), a unit that compiles
with errors stops the run naming it, and every script is safe to run again."""

import re

import pytest
from django.db.backends.oracle.base import FormatStylePlaceholderCursor

from memory_review.oracle.apply import OracleSetupError, apply_scripts, plsql_unit
from memory_review.oracle.checks import privilege_differences
from memory_review.oracle.scripts import SQL_DIR, script_paths, statements

DOCKER_INIT = SQL_DIR.parent / "docker-init"


class DriverCursor:
    """python-oracledb's cursor, as far as apply_scripts uses it. Records what reaches the driver;
    `broken` units compile with errors (the warning, and rows in USER_ERRORS)."""

    def __init__(self, broken: dict[str, str] | None = None):
        self.broken = broken or {}
        self.executed: list[str] = []
        self.warning = None
        self.rows: list = []
        self.outputtypehandler = None

    def execute(self, sql, **binds):
        if sql.startswith("SELECT line, position, text FROM user_errors"):
            error = self.broken.get(binds["name"])
            self.rows = [(3, 5, error)] if error else []
            return
        self.executed.append(sql)
        unit = plsql_unit(sql)
        self.warning = (
            "DPY-7000: creation succeeded with compilation errors"
            if unit and unit.name in self.broken
            else None
        )

    def fetchall(self):
        return self.rows

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class DriverConnection:
    def __init__(self, cursor: DriverCursor):
        self._cursor = cursor

    def cursor(self):
        return self._cursor


def applied(broken=None) -> list[str]:
    cursor = DriverCursor(broken)
    apply_scripts(DriverConnection(cursor), script_paths())
    return cursor.executed


def test_every_plsql_unit_reaches_the_driver_ending_in_end_and_its_terminator():
    sent = applied()

    units = [
        s
        for s in sent
        if re.match(
            r"\s*(BEGIN|DECLARE|CREATE\s+OR\s+REPLACE\s+(PACKAGE|FUNCTION|PROCEDURE|TRIGGER))", s, re.I
        )
    ]
    assert len(units) >= 7  # package, body, policy function, VPD block, two triggers, grants block
    for unit in units:
        assert re.search(r"\bEND(\s+\w+)?;\Z", unit), (
            f"reaches the driver without its END ...;: {unit[-60:]!r}"
        )
    plain = [s for s in sent if s not in units]
    assert plain and all(not s.rstrip().endswith(";") for s in plain)  # plain SQL: no terminator


def test_djangos_oracle_cursor_would_have_cut_each_units_terminator():
    """Why apply_oracle_sql uses the driver's own cursor: this is what Django's does first."""
    django_cursor = FormatStylePlaceholderCursor(DriverConnection(DriverCursor()), database=None)
    for unit in (s for s in applied() if plsql_unit(s) and plsql_unit(s).kind.startswith("PACKAGE")):
        through_django, _ = django_cursor._fix_for_params(unit, None)
        assert unit.endswith(";") and not through_django.endswith(";")


def test_a_unit_that_does_not_compile_stops_the_run_naming_it():
    with pytest.raises(OracleSetupError) as failed:
        applied(broken={"MEMORY_CTX_PKG": 'PLS-00103: Encountered the symbol "end-of-file"'})

    message = str(failed.value)
    assert "000_context.sql statement 1" in message and "PACKAGE MEMORY_CTX_PKG did not compile" in message
    assert "line 3:5 PLS-00103" in message


def test_a_failing_statement_stops_the_run_and_nothing_after_it_runs():
    class Refusing(DriverCursor):
        def execute(self, sql, **binds):
            if "DBMS_RLS.ADD_POLICY" in sql:
                raise RuntimeError("ORA-28101: policy already exists")
            super().execute(sql, **binds)

    cursor = Refusing()
    with pytest.raises(OracleSetupError, match=r"020_vpd.sql statement 2: .* failed: ORA-28101"):
        apply_scripts(DriverConnection(cursor), script_paths())
    assert not any("GRANT" in s for s in cursor.executed)


def test_every_script_is_safe_to_run_again():
    for path in script_paths():
        for statement in statements(path.read_text()):
            if re.match(r"\s*CREATE\b", statement, re.I):
                assert re.match(
                    r"\s*CREATE\s+(OR\s+REPLACE\b|(UNIQUE\s+)?INDEX\s+IF\s+NOT\s+EXISTS\b)", statement, re.I
                ), f"{path.name}: {statement.splitlines()[0]!r} fails when it already exists"
            if "DBMS_RLS.ADD_POLICY" in statement:
                assert "NOT EXISTS" in statement and "user_policies" in statement, (
                    f"{path.name}: unguarded ADD_POLICY"
                )


def test_the_owner_needs_no_create_any_context_and_no_password_is_written_down():
    every_sql = "\n".join(
        line
        for p in [*script_paths(), *DOCKER_INIT.iterdir()]
        for line in p.read_text().splitlines()
        if not line.lstrip().startswith(("--", "#"))
    )
    assert "CREATE ANY CONTEXT" not in every_sql.upper()
    owner_statements = [st for p in script_paths() for st in statements(p.read_text())]
    assert not [st for st in owner_statements if re.match(r"\s*CREATE\s+(OR\s+REPLACE\s+)?CONTEXT", st, re.I)]
    dba = (DOCKER_INIT / "01_app_user.sh").read_text()
    assert "CREATE OR REPLACE CONTEXT memory_ctx USING memory_owner.memory_ctx_pkg" in dba
    assert re.search(r'IDENTIFIED BY "\$\{MEMORY_APP_PASSWORD\}"', dba)
    assert not re.search(r'IDENTIFIED BY "(?!\$\{)', every_sql)


def test_set_tenant_refuses_a_tenant_that_is_not_active():
    package = statements((SQL_DIR / "000_context.sql").read_text())[1]
    assert "FROM tenancy_tenant WHERE id = p_tenant_id AND is_active = 1" in package
    assert "RAISE_APPLICATION_ERROR(-20010" in package


def test_the_grant_check_names_what_is_missing_and_what_is_extra():
    from memory_review.oracle.checks import expected_privileges

    held = expected_privileges() - {("AUDIT_TRANSITION", "INSERT", "")}
    held |= {("AUDIT_TRANSITION", "DELETE", ""), ("DJANGO_MIGRATIONS", "SELECT", "")}

    missing, extra = privilege_differences(held)

    assert missing == ["INSERT ON AUDIT_TRANSITION"]
    assert extra == ["DELETE ON AUDIT_TRANSITION", "SELECT ON DJANGO_MIGRATIONS"]
