"""The candidates' subjects indexed by the tenant's text keys (issue 29; memories/0015 says why)."""

from django.db import migrations

from memory_review.memories.search import trigram_indexes

(OLD,) = trigram_indexes(
    ("candidate_subject_tenant_trgm", "assessments_promotioncandidate", "subject"), tenant=True
)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [
        ("assessments", "0015_candidate_tenant_text_search"),
        ("memories", "0015_tenant_text_keys"),
    ]

    operations = [
        *trigram_indexes(("candidate_subject_keys", "assessments_promotioncandidate", "subject"), keys=True),
        migrations.RunPython(OLD.reverse_code, OLD.code),  # the tenant-led index (0015) goes
    ]
