"""Trigram indexes of the review queue's memories alone (issue 17, item 3): the queue's subject
filter read the whole table's trigram index and ANDed it with the 100,000 memories in review
(30 ms at two tenants of 2,000,000); the queue is a twentieth of the memories, and so is this
index's posting lists. PostgreSQL uses it when the query names the status, as the queue does."""

from django.db import migrations

from memory_review.memories.search import trigram_indexes


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [("memories", "0010_text_search")]

    operations = trigram_indexes(
        ("memory_queue_subject_trgm", "memories_memory", "subject", "status = 'needs_review'"),
        ("memory_queue_content_trgm", "memories_memory", "content", "status = 'needs_review'"),
    )
