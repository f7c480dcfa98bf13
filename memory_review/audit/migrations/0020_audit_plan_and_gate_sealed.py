"""A tenant's audit plan and its gate's changes are sealed (issue 31): the tables start empty, so
there is nothing to baseline; SEALED records the columns their seals cover
(tests/test_seal_fields.py)."""

from django.db import migrations

SEALED = {
    ("quality", "auditplan"): ("audit_plan", "tenant_id", ("every_days", "precision", "confidence", "budget", "share", "gate_target", "changed_by", "changed_at")),
    ("quality", "gatechange"): ("gate_change", "tenant_id", ("agent", "channel", "kind", "decision", "is_open", "labels", "wrong", "precision_low", "target", "changed_by", "changed_at")),
}  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("audit", "0019_audit_samples_sealed"), ("quality", "0003_audit_plan_and_gate")]

    operations = []
