"""Seals (docs/audit.md): the ledger is append-only and tenant data like the trail; a transition
may be updated only to blank its text for an erasure; rows written before the seals get one
`baseline` seal each, and the transitions are re-signed once in their new canonical form (free
text through its keyed hash, the content hash each move left), with the current audit key.

What the baseline seals is what the tables held at upgrade: whoever runs this migration holds
the key and could have sealed anything (the threat model's "host administrator"). Where a tenant
already has a checkpoint file, a new line vouching for the re-signed heads is appended to it.
"""

import hashlib
import hmac

from django.db import migrations

from memory_review.tenancy import rls

ERASED = "[erased]"
# Every column of audit_transition but the three an erasure may blank.
FIXED = (
    "id", "tenant_id", "seq", "memory_id", "candidate_id", "from_status", "to_status", "action", "actor",
    "reason_mac", "verdict_id", "row_version", "request_id_mac", "content_hash", "created_at", "prev_hash",
    "hash", "key_id",
)  # fmt: skip
SQLITE = [
    "DROP TRIGGER IF EXISTS audit_transition_no_update",
    f"""CREATE TRIGGER audit_transition_no_update BEFORE UPDATE ON audit_transition
        WHEN NOT (OLD.erased_by IS NULL AND NEW.erased_by IS NOT NULL AND NEW.reason = '{ERASED}'
                  AND NEW.request_id IS NULL AND {" AND ".join(f"NEW.{c} IS OLD.{c}" for c in FIXED)})
        BEGIN SELECT RAISE(ABORT, 'audit_transition is append-only'); END""",
    # audit.0006 rebuilt the table on SQLite (a column with a default), which drops its triggers.
    "DROP TRIGGER IF EXISTS audit_transition_no_delete",
    """CREATE TRIGGER audit_transition_no_delete BEFORE DELETE ON audit_transition
       BEGIN SELECT RAISE(ABORT, 'audit_transition is append-only'); END""",
    """CREATE TRIGGER audit_seal_no_update BEFORE UPDATE ON audit_seal
       BEGIN SELECT RAISE(ABORT, 'audit_seal is append-only'); END""",
    # No DELETE trigger on SQLite, which has no roles to keep a trigger from being dropped: a
    # removed seal is caught by verification, and Django's test flush (DELETE FROM) needs it.
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
          RAISE EXCEPTION 'audit_transition is append-only';
        END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION audit_seal_append_only() RETURNS trigger AS $$
       BEGIN RAISE EXCEPTION 'audit_seal is append-only'; END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER audit_seal_append_only BEFORE UPDATE OR DELETE ON audit_seal
       FOR EACH ROW EXECUTE FUNCTION audit_seal_append_only()""",
]
# The append-only trigger, off while the transitions are re-signed (as in audit.0004).
ORACLE_TRIGGER = (
    "BEGIN EXECUTE IMMEDIATE 'ALTER TRIGGER audit_transition_append_only {}'; "
    "EXCEPTION WHEN OTHERS THEN IF SQLCODE != -4080 THEN RAISE; END IF; END;"
)
PAUSE = {
    "sqlite": [SQLITE[0]],
    "postgresql": ["ALTER TABLE audit_transition DISABLE TRIGGER audit_transition_append_only"],
    "oracle": [ORACLE_TRIGGER.format("DISABLE")],
}
RESUME = {
    "sqlite": [SQLITE[1]],
    "postgresql": ["ALTER TABLE audit_transition ENABLE TRIGGER audit_transition_append_only"],
    "oracle": [ORACLE_TRIGGER.format("ENABLE")],
}

# What each kind sealed when this migration was written. A later change to a model's seal_fields
# re-baselines its rows in a migration of its own with a SEALED of its own (tests/test_seal_fields.py).
SEALED = {
    ("tenancy", "tenant"): ("tenant", "pk", ("slug", "name", "two_person_rule", "two_person_since", "is_active", "created_at")),
    ("tenancy", "membership"): ("membership", "tenant_id", ("user_id", "role")),
    ("tenancy", "apitoken"): ("api_token", "tenant_id", ("name", "prefix", "token_hash", "created_at", "expires_at", "revoked_at", "revoked_by")),
    ("memories", "sourceevent"): ("event", "tenant_id", ("source", "text", "text_hash", "user_id", "agent_id", "thread_id", "run_id", "occurred_at", "erased_at", "created_at")),
    ("memories", "memory"): ("memory", "tenant_id", ("kind", "subject", "content", "content_hash", "confidence", "written_by", "source_event_id", "channel", "version", "superseded_by_id", "valid_from", "valid_until", "deleted_at", "user_id", "agent_id", "thread_id", "created_at")),
    ("memories", "memorylink"): ("link", "tenant_id", ("src_id", "dst_id", "kind", "origin", "created_at")),
    ("memories", "erasure"): ("erasure", "tenant_id", ("user_id", "requested_by", "reason", "confirmed_by", "memories_erased", "events_erased", "candidates_erased", "labels_cleared", "proof_hash", "completed_at", "created_at")),
    ("memories", "dualcontrol"): ("dual_control", "tenant_id", ("kind", "user_id", "memory_id", "seen_version", "reason", "requested_by_id", "requested_at", "expires_at", "decided_by_id", "decided_at", "outcome", "erasure_id", "change")),
    ("assessments", "policyversion"): ("policy", "tenant_id", ("number", "mode", "thresholds", "note", "created_by", "created_at")),
    ("assessments", "assessment"): ("assessment", "tenant_id", ("purpose", "event_id", "model_name", "question_set_version", "policy_id", "offline_standin", "remember_successor", "reason", "targets", "created_at")),
    ("assessments", "verdict"): ("verdict", "tenant_id", ("assessment_id", "memory_id", "event_id", "bears", "still_true", "replaces", "partial", "hypothetical", "directive", "disposition", "row_version", "proposed_status", "applied", "shadow_policy_id", "shadow_disposition", "created_at")),
    ("assessments", "promotioncandidate"): ("candidate", "tenant_id", ("kind", "subject", "claim", "claim_hash", "source_event_id", "source_hash", "proposed_by", "check_failed", "supported", "scope_fits", "conflict", "assessment_id", "policy_decision", "reviewer_decision", "reviewed_by", "disagreement", "memory_id", "user_id", "agent_id", "thread_id", "created_at")),
    ("calibration", "label"): ("label", "tenant_id", ("verdict_id", "candidate_id", "labeler_id", "outcome", "alternatives", "note", "adjudicated", "withdrawn_at", "created_at")),
    ("calibration", "policyproposal"): ("proposal", "tenant_id", ("thresholds", "mode", "reason", "evidence", "proposed_by_id", "proposed_at", "decided_by_id", "decided_at", "decision_note", "outcome", "policy_id")),
    ("calibration", "replayset"): ("replay_set", "tenant_id", ("name", "content", "cases", "imported_by_id", "created_at")),
    ("audit", "auditverification"): ("verification", "tenant_id", ("verified_at", "intact", "problem", "seq", "seal_seq", "checkpoint_seq", "checkpoint_lines", "checkpoint_line_hash", "by")),
}  # fmt: skip

CANONICAL_V2 = (
    "tenant_id", "seq", "memory_id", "candidate_id", "from_status", "to_status", "action", "actor",
    "reason_mac", "verdict_id", "row_version", "request_id_mac", "content_hash", "prev_hash",
)  # fmt: skip


def triggers(apps, schema_editor):
    for sql in {"sqlite": SQLITE, "postgresql": POSTGRES}.get(schema_editor.connection.vendor, []):
        schema_editor.execute(sql)


def seal_what_exists(apps, schema_editor):
    from memory_review.audit import checkpoints
    from memory_review.integrity import seals
    from memory_review.integrity.context import acting_as
    from memory_review.integrity.heads import GENESIS, canonical
    from memory_review.integrity.keys import keyring

    tenants = list(apps.get_model("tenancy", "Tenant").objects.order_by("pk"))
    if not tenants:
        return  # a new installation: nothing to re-sign or seal
    ring = keyring()
    key = ring.key(ring.current)

    def mac(text):
        return None if text is None else hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()

    vendor = schema_editor.connection.vendor
    transition_model = apps.get_model("audit", "Transition")
    chain_model = apps.get_model("audit", "AuditChain")
    content = dict(apps.get_model("memories", "Memory").objects.values_list("pk", "content_hash"))
    claims = dict(apps.get_model("assessments", "PromotionCandidate").objects.values_list("pk", "claim_hash"))
    for sql in PAUSE.get(vendor, []):
        schema_editor.execute(sql)
    for head in chain_model.objects.all():
        prev = GENESIS
        for row in transition_model.objects.filter(tenant_id=head.tenant_id).order_by("seq").iterator():
            row.reason_mac, row.request_id_mac = mac(row.reason), mac(row.request_id)
            row.content_hash = content.get(row.memory_id) if row.memory_id else claims.get(row.candidate_id)
            row.prev_hash, row.key_id = prev, ring.current
            payload = {name: getattr(row, name) for name in CANONICAL_V2}
            payload.update(key_id=row.key_id, created_at=row.created_at.isoformat(timespec="microseconds"))
            row.hash = hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()
            transition_model.objects.filter(pk=row.pk).update(
                reason_mac=row.reason_mac, request_id_mac=row.request_id_mac, content_hash=row.content_hash,
                prev_hash=row.prev_hash, key_id=row.key_id, hash=row.hash,
            )  # fmt: skip
            prev = row.hash
        chain_model.objects.filter(pk=head.pk).update(head_hash=prev)
    for sql in RESUME.get(vendor, []):
        schema_editor.execute(sql)

    with acting_as("system:migration audit.0007"):
        for (app_label, model_name), (kind, tenant_column, fields) in SEALED.items():
            model = apps.get_model(app_label, model_name)
            model.seal_kind, model.seal_tenant, model.seal_fields = kind, tenant_column, fields
            for tenant in tenants:
                column = "pk" if tenant_column == "pk" else tenant_column
                found = model._base_manager.filter(**{column: tenant.pk}).order_by("pk")
                entries = [
                    (kind, pk, seals.BASELINE, seals.digest(model, pk, tenant_id, values, key))
                    for pk, tenant_id, values in seals.rows(found)
                ]
                for start in range(0, len(entries), 5000):
                    seals.append(tenant.pk, entries[start : start + 5000], ring=ring)
        for tenant in tenants:
            if checkpoints.path_for(tenant).exists():
                checkpoints.write(tenant)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0006_seals"),
        ("tenancy", "0006_two_person_since"),
        ("memories", "0008_dual_control_settings_and_members"),
        ("assessments", "0007_verdict_still_true_index"),
        ("calibration", "0002_labeling_and_proposals"),
        ("workflow", "0001_claims_move_here"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: rls.enable(schema_editor, ["audit_seal"]),
            lambda apps, schema_editor: rls.disable(schema_editor, ["audit_seal"]),
        ),
        migrations.RunPython(triggers, migrations.RunPython.noop),
        migrations.RunPython(seal_what_exists, migrations.RunPython.noop),
    ]
