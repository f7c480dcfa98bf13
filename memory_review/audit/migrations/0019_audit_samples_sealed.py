"""Sampled audits are sealed (issue 31): their tables start empty, so there is nothing to
baseline; SEALED records the columns their seals cover (tests/test_seal_fields.py)."""

from django.db import migrations

SEALED = {
    ("quality", "auditsample"): ("audit_sample", "tenant_id", ("population", "period_start", "period_end", "seed", "precision", "confidence", "budget", "labels_asked", "strata", "items", "drawn_by", "drawn_at")),
    ("quality", "audititem"): ("audit_item", "tenant_id", ("sample_id", "stratum", "memory_id", "transition_id", "rank")),
    ("quality", "auditlabel"): ("audit_label", "tenant_id", ("item_id", "labeler_id", "outcome", "note", "adjudicated", "withdrawn_at", "created_at")),
}  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("audit", "0018_seal_object_by_id"), ("quality", "0002_audit_labels")]

    operations = []
