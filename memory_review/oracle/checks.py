"""What `manage.py oracle_check` proves on a live Oracle schema after apply_oracle_sql.

As the owner: no INVALID object, every tenant table (but the two named in UNPOLICIED) under an
enabled VPD policy, every function-based unique index and trigger in place, MEMORY_APP's grants
exactly the map. As the application user, with raw SQL: no rows without a tenant in the
context, only that tenant's rows with one, set_tenant refusing an unknown tenant, and the
privileges it must not have refused.

No Oracle server runs on the developers' machines: this module has been reviewed and its pure
parts are tested (tests/test_oracle_sql.py); docs/oracle.md says how to run it.
"""

from dataclasses import dataclass, field

from memory_review.tenancy.grants import APP_GRANTS, UNPOLICIED

from .render import conditional_unique_constraints

TRIGGERS = ("AUDIT_TRANSITION_APPEND_ONLY", "AUDIT_TRANSITION_LEDGER")


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    proven: list[str] = field(default_factory=list)

    def check(self, ok: bool, proven: str, problem: str) -> None:
        (self.proven if ok else self.problems).append(proven if ok else problem)


def expected_privileges(grantee_tables: set[str] | None = None) -> set[tuple[str, str, str]]:
    """(TABLE, PRIVILEGE, COLUMN or '') the app user must hold, from the map."""
    expected = set()
    for table, grant in APP_GRANTS.items():
        for privilege in grant.privileges:
            expected.add((table.upper(), privilege, ""))
        for column in grant.update_columns:
            expected.add((table.upper(), "UPDATE", column.upper()))
    return expected


def privilege_differences(held: set[tuple[str, str, str]]) -> tuple[list[str], list[str]]:
    """(missing, extra) as readable lines."""
    expected = expected_privileges()

    def line(item):
        table, privilege, column = item
        return f"{privilege}{f'({column})' if column else ''} ON {table}"

    return sorted(map(line, expected - held)), sorted(map(line, held - expected))


def as_owner(cursor, app_user: str) -> Report:
    report = Report()
    cursor.execute("SELECT object_type, object_name FROM user_objects WHERE status = 'INVALID' ORDER BY 2")
    invalid = [f"{kind} {name}" for kind, name in cursor.fetchall()]
    report.check(not invalid, "no INVALID objects", f"INVALID objects: {', '.join(invalid)}")

    exempt = ", ".join(f"'{table.upper()}'" for table in UNPOLICIED)
    cursor.execute(
        "SELECT c.table_name FROM user_tab_columns c JOIN user_tables t ON t.table_name = c.table_name "
        f"WHERE c.column_name = 'TENANT_ID' AND c.table_name NOT IN ({exempt}) AND NOT EXISTS ("
        "SELECT 1 FROM user_policies p WHERE p.object_name = c.table_name AND p.enable = 'YES' "
        "AND p.sel = 'YES' AND p.ins = 'YES' AND p.upd = 'YES' AND p.del = 'YES' AND p.chk_option = 'YES') "
        "ORDER BY 1"
    )
    bare = [row[0] for row in cursor.fetchall()]
    report.check(
        not bare,
        "every tenant table has an enabled VPD policy with update check",
        f"tenant tables without an enabled VPD policy: {', '.join(bare)} (run apply_oracle_sql)",
    )

    cursor.execute("SELECT index_name FROM user_indexes WHERE uniqueness = 'UNIQUE'")
    indexes = {row[0] for row in cursor.fetchall()}
    missing = [name for _, name in conditional_unique_constraints() if name.upper() not in indexes]
    report.check(
        not missing, "every function-based unique index exists", f"missing indexes: {', '.join(missing)}"
    )

    cursor.execute("SELECT trigger_name, status FROM user_triggers")
    triggers = dict(cursor.fetchall())
    off = [name for name in TRIGGERS if triggers.get(name) != "ENABLED"]
    report.check(not off, "the audit triggers are enabled", f"missing or disabled triggers: {', '.join(off)}")

    cursor.execute(
        "SELECT table_name, privilege, '' FROM user_tab_privs_made WHERE grantee = :who AND type = 'TABLE' "
        "UNION ALL SELECT table_name, privilege, column_name FROM user_col_privs_made WHERE grantee = :who",
        who=app_user.upper(),
    )
    held = {(table, privilege, column or "") for table, privilege, column in cursor.fetchall()}
    missing_privileges, extra = privilege_differences(held)
    report.check(
        not missing_privileges,
        f"{app_user} holds every privilege the code needs",
        f"{app_user} lacks: {'; '.join(missing_privileges)}",
    )
    report.check(
        not extra, f"{app_user} holds nothing beyond them", f"{app_user} also holds: {'; '.join(extra)}"
    )
    return report


def as_app_user(app_cursor, owner_cursor, app_user: str) -> Report:
    """Raw SQL as the application user (its session's CURRENT_SCHEMA set to the owner)."""
    report = Report()
    owner_cursor.execute("SELECT tenant_id, COUNT(*) FROM memories_memory GROUP BY tenant_id")
    per_tenant = dict(owner_cursor.fetchall())
    if not per_tenant:
        report.problems.append("no memories to prove VPD with: run seed_demo first (as the owner)")
        return report

    app_cursor.execute("BEGIN memory_ctx_pkg.clear; END;")
    app_cursor.execute("SELECT COUNT(*) FROM memories_memory")
    (seen,) = app_cursor.fetchone()
    report.check(
        seen == 0,
        "without a tenant set, the app user sees no rows",
        f"without a tenant set, the app user sees {seen} rows",
    )

    for tenant_id, owned in sorted(per_tenant.items()):
        app_cursor.callproc("memory_ctx_pkg.set_tenant", [tenant_id])
        app_cursor.execute(
            "SELECT COUNT(*), COUNT(CASE WHEN tenant_id <> :t THEN 1 END) FROM memories_memory", t=tenant_id
        )
        visible, foreign = app_cursor.fetchone()
        report.check(
            visible == owned and foreign == 0,
            f"tenant {tenant_id}: the app user sees its {owned} memories and no other tenant's",
            f"tenant {tenant_id}: the app user sees {visible} memories ({foreign} of other tenants); "
            f"the owner counts {owned}",
        )

    refusals = {
        "set_tenant of a tenant that does not exist": "BEGIN memory_ctx_pkg.set_tenant(-1); END;",
        "DELETE on source events": "DELETE FROM memories_sourceevent WHERE 1 = 0",
        "UPDATE of a verdict's votes": "UPDATE assessments_verdict SET still_true = 0 WHERE 1 = 0",
        "UPDATE of the audit trail": "UPDATE audit_transition SET reason = reason WHERE 1 = 0",
        "reading django_migrations": "SELECT COUNT(*) FROM django_migrations",
    }
    for what, statement in refusals.items():
        try:
            app_cursor.execute(statement)
        except Exception as exc:  # oracledb.DatabaseError: the refusal this proves
            report.proven.append(f"refused to {app_user}: {what} ({str(exc).splitlines()[0]})")
        else:
            report.problems.append(f"{app_user} was allowed: {what}")
    return report
