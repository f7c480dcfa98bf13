"""The Oracle path, checked offline: no Oracle server runs on these machines (DESIGN §8)."""

import re
from pathlib import Path

from django.apps import apps
from django.conf import settings

from memory_review.oracle.render import conditional_unique_constraints, render, render_grants
from memory_review.oracle.scripts import GENERATED, GRANTS, SQL_DIR, script_paths, statements
from memory_review.tenancy.grants import UNPOLICIED


def test_the_rendered_oracle_schema_matches_the_migrations():
    on_disk = (SQL_DIR / GENERATED).read_text()
    assert render() == on_disk, "sql/oracle/010_schema.sql is stale: run `python manage.py render_oracle_sql`"


def test_every_app_with_migrations_is_rendered():
    from pathlib import Path

    from django.apps import apps

    from memory_review.oracle.render import PROJECT_APPS

    migrated = {
        config.label
        for config in apps.get_app_configs()
        if config.name.startswith("memory_review") and (Path(config.path) / "migrations").is_dir()
    }
    assert set(PROJECT_APPS) == migrated


def test_the_rendered_grants_match_the_map():
    on_disk = (SQL_DIR / GRANTS).read_text()
    assert render_grants() == on_disk, (
        "sql/oracle/050_grants.sql is stale: run `python manage.py render_oracle_sql`"
    )


def test_every_partial_unique_constraint_has_a_function_based_index_on_oracle():
    """Django drops conditional unique constraints on Oracle without a word; sql/ must not."""
    rendered = "\n".join(line for line in render().lower().splitlines() if not line.startswith("--"))
    indexes = "\n".join(path.read_text() for path in script_paths()).lower()
    constraints = conditional_unique_constraints()
    assert constraints, "expected the live-subject and policy-mode rules"
    for model, name in constraints:
        assert name not in rendered, f"{model}.{name} unexpectedly reached Oracle through Django"
        assert re.search(rf"create unique index if not exists {name} on \w+ \(\s*case when", indexes), (
            f"{model}.{name} would silently vanish on Oracle: "
            "add a function-based index to sql/oracle/030_indexes.sql"
        )


def test_the_vpd_block_covers_every_tenant_table_but_the_ones_exempt_with_a_reason():
    """The block adds a policy to each table with a TENANT_ID column; the exemptions in the SQL
    are exactly those grants.UNPOLICIED gives a reason for."""
    vpd = (SQL_DIR / "020_vpd.sql").read_text()
    exempt_in_sql = set(re.findall(r"'(TENANCY_\w+)'", vpd))
    assert exempt_in_sql == {table.upper() for table in UNPOLICIED}
    assert all(len(reason) > 40 for reason in UNPOLICIED.values())
    for model in apps.get_models():
        tenant = [f for f in model._meta.fields if f.name == "tenant"]
        if tenant:
            assert tenant[0].column == "tenant_id", model  # the column the block looks for
    block = next(s for s in statements(vpd) if "DBMS_RLS.ADD_POLICY" in s)
    assert "update_check    => TRUE" in block and "statement_types => 'SELECT,INSERT,UPDATE,DELETE'" in block


def test_no_model_filters_on_a_text_column_in_its_constraints_or_indexes():
    """TextField is NCLOB on Oracle: it cannot be indexed or compared."""
    for model in apps.get_models():
        text_columns = {f.name for f in model._meta.fields if f.get_internal_type() == "TextField"}
        named = set()
        for item in [*model._meta.indexes, *model._meta.constraints]:
            named.update(getattr(item, "fields", ()) or ())
        assert not text_columns & named, f"{model._meta.label} indexes an NCLOB column"


def test_scripts_split_like_sqlplus():
    script = """
-- a comment
CREATE UNIQUE INDEX a_uq ON t (CASE WHEN x = 1 THEN y END);
/
CREATE OR REPLACE PACKAGE BODY p AS
  PROCEDURE q IS BEGIN NULL; END q;
END p;
/
"""
    assert statements(script) == [
        "CREATE UNIQUE INDEX a_uq ON t (CASE WHEN x = 1 THEN y END)",
        "CREATE OR REPLACE PACKAGE BODY p AS\n  PROCEDURE q IS BEGIN NULL; END q;\nEND p;",
    ]


def test_every_hand_written_script_parses_into_statements():
    counts = {path.name: len(statements(path.read_text())) for path in script_paths()}
    assert counts["000_context.sql"] == 2  # the package and its body (a DBA creates the context)
    assert counts["020_vpd.sql"] == 2  # the function and the block that adds missing policies
    # five unique indexes (two for the webhook deliveries), the word list, three text indexes; and
    # for each of the three positioned tables (issue 30) the constraint dropped, a unique index over
    # positions and a plain one
    assert counts["030_indexes.sql"] == 9 + 3 * 3


def test_the_assessment_list_groups_by_no_text_column_on_oracle():
    """An aggregate across a join groups by every selected column on Oracle, NCLOBs included."""
    from memory_review.assessments.selectors import assessments_of
    from memory_review.oracle.render import offline_connection
    from memory_review.tenancy.models import Tenant

    query = assessments_of(Tenant(pk=1, slug="t")).order_by("-id")[:50].query
    sql, _ = query.get_compiler(connection=offline_connection()).as_sql()
    group_bys = [part.split(")")[0] for part in sql.split("GROUP BY")[1:]]
    assert all('"TEXT"' not in g and '"ERROR"' not in g and '"THRESHOLDS"' not in g for g in group_bys)


def test_the_ledger_is_an_oracle_blockchain_table_in_a_schema_of_its_own_fed_by_a_trigger():
    dba = (SQL_DIR.parent / "docker-init" / "02_ledger.sql").read_text()
    trigger = statements((SQL_DIR / "045_ledger.sql").read_text())

    # The container runs this one with SQL*Plus as SYSDBA: plain statements, each ending in ';'.
    sql_only = "\n".join(line for line in dba.splitlines() if not line.startswith("--"))
    table = next(s.strip() for s in sql_only.split(";\n") if "BLOCKCHAIN TABLE" in s)
    assert table.startswith("CREATE BLOCKCHAIN TABLE memory_ledger.transition_ledger")
    for clause in (
        "NO DROP UNTIL 365 DAYS IDLE",
        "NO DELETE UNTIL 365 DAYS AFTER INSERT",
        'HASHING USING "SHA2_512"',
    ):
        assert clause in table
    assert "GRANT INSERT, SELECT ON memory_ledger.transition_ledger TO memory_owner" in dba
    assert len(trigger) == 1 and trigger[0].endswith("END audit_transition_ledger;")
    assert "INSERT INTO memory_ledger.transition_ledger" in trigger[0] and ":NEW.hash" in trigger[0]


def test_no_locking_query_takes_a_row_limit_which_oracle_refuses():
    """Django raises NotSupportedError on Oracle for select_for_update() with a LIMIT (.first(),
    a slice); .get() leaves the limit out there. SQLite ignores the lock and PostgreSQL allows
    the limit, so only this test would notice."""
    from memory_review.oracle.render import offline_connection

    assert not offline_connection().features.supports_select_for_update_with_limit
    code = "\n".join(
        " ".join(path.read_text().split())  # one line per file: chains span lines
        for path in (Path(settings.BASE_DIR) / "memory_review").rglob("*.py")
        if "migrations" not in path.parts
    )
    offenders = re.findall(
        r"select_for_update\([^)]*\)(?:\.\w+\([^()]*(?:\([^()]*\))?[^()]*\))*\.(?:first|last)\(\)", code
    )
    offenders += re.findall(r"select_for_update\([^)]*\)[^\n]{0,200}?\)\[", code)
    assert offenders == []
