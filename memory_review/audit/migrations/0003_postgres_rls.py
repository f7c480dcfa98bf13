"""PostgreSQL row-level security on every tenant table (memory_review/tenancy/rls.py)."""

from django.db import migrations

from memory_review.tenancy import rls

TABLES = [
    "memories_sourceevent", "memories_memory", "memories_memorylink", "memories_erasure",
    "assessments_policyversion", "assessments_assessment", "assessments_verdict",
    "assessments_promotioncandidate", "audit_transition", "audit_auditchain", "calibration_label",
]  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0002_append_only"),
        ("assessments", "0002_pipeline_fields"),
        ("calibration", "0001_initial"),
        ("memories", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: rls.enable(schema_editor, TABLES),
            lambda apps, schema_editor: rls.disable(schema_editor, TABLES),
        )
    ]
