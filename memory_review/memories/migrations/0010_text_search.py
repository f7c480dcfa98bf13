"""Trigram indexes for searching subjects and content (issue 17, item 3; memories/search.py)."""

from django.db import migrations

from memory_review.memories.search import trigram_indexes


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [("memories", "0009_change_feed")]

    operations = trigram_indexes(
        ("memory_subject_trgm", "memories_memory", "subject"),
        ("memory_content_trgm", "memories_memory", "content"),
    )
