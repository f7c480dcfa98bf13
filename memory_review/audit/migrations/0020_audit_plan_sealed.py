"""A tenant's audit plan is sealed (issue 31): the table starts empty, so there is nothing to
baseline; SEALED records the columns its seal covers (tests/test_seal_fields.py)."""

from django.db import migrations

SEALED = {
    ("quality", "auditplan"): ("audit_plan", "tenant_id", ("every_days", "precision", "confidence", "budget", "share", "changed_by", "changed_at")),
}  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("audit", "0019_audit_samples_sealed"), ("quality", "0003_audit_plan")]

    operations = []
