"""The candidates' subjects indexed with their tenant leading (issue 29; memories/0013 says why)."""

from django.db import migrations

from memory_review.memories.search import trigram_indexes


(OLD,) = trigram_indexes(("candidate_subject_trgm", "assessments_promotioncandidate", "subject"))


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [("assessments", "0014_assessment_model_index")]

    operations = [
        *trigram_indexes(
            ("candidate_subject_tenant_trgm", "assessments_promotioncandidate", "subject"), tenant=True
        ),
        migrations.RunPython(OLD.reverse_code, OLD.code),  # the text-only index (0008) goes
    ]
