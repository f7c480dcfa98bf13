"""A trigram index for the audit trail's subject filter over candidates (memories/search.py)."""

from django.db import migrations

from memory_review.memories.search import trigram_indexes


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [("assessments", "0007_verdict_still_true_index"), ("memories", "0010_text_search")]

    operations = trigram_indexes(("candidate_subject_trgm", "assessments_promotioncandidate", "subject"))
