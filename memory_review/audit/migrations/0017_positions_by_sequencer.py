"""Positions given by the sequencer (issue 30, docs/audit.md "Sequencing"): a transition and a
seal are written with no position (seq, prev_hash, hash, and a seal's trail_seq NULL) and a keyed
digest of their own (`leaf`); the sequencer gives committed rows their positions. Every row
written before this migration already has its position and is protected by its chain hash, as it
was: the chains go on from the same heads, so they verify across the change.

The append-only triggers allow one more update: giving a waiting row its position, once, every
other column as it was. SQLite rebuilds a table whose column changes, dropping its triggers: they
are made again here. Oracle's are in sql/oracle/040_audit.sql.
"""

from django.db import migrations, models

ERASED = "[erased]"
TRANSITION = (
    "id", "tenant_id", "memory_id", "candidate_id", "from_status", "to_status", "action", "actor",
    "reason", "reason_mac", "verdict_id", "row_version", "request_id", "request_id_mac", "content_hash",
    "erased_by", "created_at", "key_id", "leaf",
)  # fmt: skip
TRANSITION_POSITION = ("seq", "prev_hash", "hash")
SEAL = (
    "id", "tenant_id", "kind", "object_id", "action", "digest", "actor", "erasure", "created_at", "key_id",
    "leaf",
)  # fmt: skip
SEAL_POSITION = ("seq", "prev_hash", "trail_seq", "hash")
# An erasure blanks a transition's text; every other column stays.
ERASE_FIXED = tuple(c for c in TRANSITION if c not in ("reason", "request_id", "erased_by")) + TRANSITION_POSITION


def _same(columns):
    return " AND ".join(f"NEW.{c} IS OLD.{c}" for c in columns)


def _given(position):
    return "OLD.seq IS NULL AND " + " AND ".join(f"NEW.{c} IS NOT NULL" for c in position)


SQLITE = [
    "DROP TRIGGER IF EXISTS audit_transition_no_update",
    f"""CREATE TRIGGER audit_transition_no_update BEFORE UPDATE ON audit_transition
        WHEN NOT ((OLD.erased_by IS NULL AND NEW.erased_by IS NOT NULL AND NEW.reason = '{ERASED}'
                   AND NEW.request_id IS NULL AND {_same(ERASE_FIXED)})
               OR ({_given(TRANSITION_POSITION)} AND {_same(TRANSITION)}))
        BEGIN SELECT RAISE(ABORT, 'audit_transition is append-only'); END""",
    "DROP TRIGGER IF EXISTS audit_transition_no_delete",
    """CREATE TRIGGER audit_transition_no_delete BEFORE DELETE ON audit_transition
       BEGIN SELECT RAISE(ABORT, 'audit_transition is append-only'); END""",
    "DROP TRIGGER IF EXISTS audit_seal_no_update",
    f"""CREATE TRIGGER audit_seal_no_update BEFORE UPDATE ON audit_seal
        WHEN NOT ({_given(SEAL_POSITION)} AND {_same(SEAL)})
        BEGIN SELECT RAISE(ABORT, 'audit_seal is append-only'); END""",
]
POSTGRES = [
    f"""CREATE OR REPLACE FUNCTION audit_transition_append_only() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'UPDATE' AND OLD.erased_by IS NULL AND NEW.erased_by IS NOT NULL
             AND NEW.reason = '{ERASED}' AND NEW.request_id IS NULL
             AND to_jsonb(NEW) - 'reason' - 'request_id' - 'erased_by'
               = to_jsonb(OLD) - 'reason' - 'request_id' - 'erased_by' THEN
            RETURN NEW;  -- an erasure blanks the text; the keyed hashes beside it stay
          END IF;
          IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL AND NEW.prev_hash IS NOT NULL
             AND NEW.hash IS NOT NULL
             AND to_jsonb(NEW) - 'seq' - 'prev_hash' - 'hash' = to_jsonb(OLD) - 'seq' - 'prev_hash' - 'hash' THEN
            RETURN NEW;  -- the sequencer gives a waiting row its position, once
          END IF;
          RAISE EXCEPTION 'audit_transition is append-only';
        END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION audit_seal_append_only() RETURNS trigger AS $$
       BEGIN
         IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL AND NEW.prev_hash IS NOT NULL
            AND NEW.trail_seq IS NOT NULL AND NEW.hash IS NOT NULL
            AND to_jsonb(NEW) - 'seq' - 'prev_hash' - 'trail_seq' - 'hash'
              = to_jsonb(OLD) - 'seq' - 'prev_hash' - 'trail_seq' - 'hash' THEN
           RETURN NEW;  -- the sequencer gives a waiting seal its position, once
         END IF;
         RAISE EXCEPTION 'audit_seal is append-only';
       END $$ LANGUAGE plpgsql""",
]


def _triggers(apps, schema_editor):
    for sql in {"sqlite": SQLITE, "postgresql": POSTGRES}.get(schema_editor.connection.vendor, []):
        schema_editor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0016_actor_seq_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='seal',
            name='leaf',
            field=models.CharField(blank=True, help_text='HMAC-SHA256 without the position (NULL before 0017).', max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='transition',
            name='leaf',
            field=models.CharField(blank=True, help_text='HMAC-SHA256 of the row without its position, written with it (NULL before 0017).', max_length=64, null=True),
        ),
        migrations.AlterField(
            model_name='seal',
            name='hash',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AlterField(
            model_name='seal',
            name='prev_hash',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AlterField(
            model_name='seal',
            name='seq',
            field=models.PositiveBigIntegerField(blank=True, help_text="Position in the tenant's ledger, from 1: NULL until sequenced.", null=True),
        ),
        migrations.AlterField(
            model_name='seal',
            name='trail_seq',
            field=models.PositiveBigIntegerField(blank=True, help_text="How far the transitions' chain reached when it was sequenced.", null=True),
        ),
        migrations.AlterField(
            model_name='transition',
            name='hash',
            field=models.CharField(blank=True, help_text='HMAC-SHA256 under key_id (docs/audit.md).', max_length=64, null=True),
        ),
        migrations.AlterField(
            model_name='transition',
            name='prev_hash',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AlterField(
            model_name='transition',
            name='seq',
            field=models.PositiveBigIntegerField(blank=True, help_text="Position in the tenant's chain, from 1: NULL until sequenced.", null=True),
        ),
        # Forward only: the old triggers refuse a row without a position, which the old code never wrote.
        migrations.RunPython(_triggers, migrations.RunPython.noop),
    ]
