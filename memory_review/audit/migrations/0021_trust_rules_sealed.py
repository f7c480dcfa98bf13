"""A tenant's trust rules are sealed (issue 31): the table starts empty, so there is nothing to
baseline; SEALED records the columns its seal covers (tests/test_seal_fields.py)."""

from django.db import migrations

SEALED = {
    ("memories", "trustrules"): ("trust_rules", "tenant_id", ("hold_classes", "changed_by", "changed_at")),
}  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("audit", "0020_audit_plan_and_gate_sealed"), ("memories", "0018_trust_classes")]

    operations = []
