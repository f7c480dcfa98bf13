"""Seals of many rows (issue 30, docs/audit.md "Seals"): a write of many rows of a kind sealed in
groups (an event's votes) is sealed by one ledger row whose `members` hold each row's id and
digest (in the ledger row's leaf and hash), and whose digest is the HMAC of them. Rows sealed
before keep one ledger row each, with no members, and a row without members is hashed as before:
every existing row and hash is as it was, so the ledger verifies across the change.

The append-only triggers: PostgreSQL's compares whole rows, so the new column is held with the
rest; SQLite's names its columns, so it is made again with this one; Oracle's is in
sql/oracle/040_audit.sql.
"""

from django.db import migrations, models

SEAL = (
    "id", "tenant_id", "kind", "object_id", "action", "digest", "actor", "erasure", "created_at", "key_id",
    "leaf", "members",
)  # fmt: skip
SEAL_POSITION = ("seq", "prev_hash", "trail_seq", "hash")

SQLITE = [
    "DROP TRIGGER IF EXISTS audit_seal_no_update",
    f"""CREATE TRIGGER audit_seal_no_update BEFORE UPDATE ON audit_seal
        WHEN NOT (OLD.seq IS NULL AND {" AND ".join(f"NEW.{c} IS NOT NULL" for c in SEAL_POSITION)}
                  AND {" AND ".join(f"NEW.{c} IS OLD.{c}" for c in SEAL)})
        BEGIN SELECT RAISE(ABORT, 'audit_seal is append-only'); END""",
]


def _triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0022_notices_sealed"),
    ]

    operations = [
        migrations.AddField(
            model_name="seal",
            name="members",
            field=models.TextField(
                blank=True,
                help_text="A group's rows, [[id, digest], ...] by id; its digest is their HMAC (NULL for one row).",
                null=True,
            ),
        ),
        migrations.RunPython(_triggers, migrations.RunPython.noop),
    ]
