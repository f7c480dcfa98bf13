"""Transitions are append-only in the database too: UPDATE and DELETE are refused.

SQLite and PostgreSQL get triggers here; Oracle's trigger is in sql/oracle/040_audit.sql.
"""

from django.db import migrations

SQLITE = [
    """CREATE TRIGGER audit_transition_no_update BEFORE UPDATE ON audit_transition
       BEGIN SELECT RAISE(ABORT, 'audit_transition is append-only'); END""",
    """CREATE TRIGGER audit_transition_no_delete BEFORE DELETE ON audit_transition
       BEGIN SELECT RAISE(ABORT, 'audit_transition is append-only'); END""",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS audit_transition_no_update",
    "DROP TRIGGER IF EXISTS audit_transition_no_delete",
]

POSTGRES = [
    """CREATE OR REPLACE FUNCTION audit_transition_append_only() RETURNS trigger AS $$
       BEGIN RAISE EXCEPTION 'audit_transition is append-only'; END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER audit_transition_append_only BEFORE UPDATE OR DELETE ON audit_transition
       FOR EACH ROW EXECUTE FUNCTION audit_transition_append_only()""",
]
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS audit_transition_append_only ON audit_transition",
    "DROP FUNCTION IF EXISTS audit_transition_append_only()",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRES}),
            _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE}),
        )
    ]
