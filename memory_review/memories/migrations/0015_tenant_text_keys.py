"""Each tenant's text keys (issue 29): the subjects' and contents' trigrams indexed with the tenant
in each key (search.TextKeys), so a tenant's posting lists hold its rows alone. With the tenant
only leading the text (0013), the trigrams were every tenant's: "relocation", written 500,000
times in one tenant's busy day, cost a search in the other tenant, holding none, 67 ms at
2,000,000 memories a tenant, the index walking the other's matches to find none of its own."""

from django.db import migrations

from memory_review.memories.search import trigram_indexes

# The tenant-led indexes (0013): dropped going forwards, built again going back.
(OLD,) = trigram_indexes(
    ("memory_subject_tenant_trgm", "memories_memory", "subject"),
    ("memory_content_tenant_trgm", "memories_memory", "content"),
    ("memory_queue_subject_tenant_trgm", "memories_memory", "subject", "status = 'needs_review'"),
    ("memory_queue_content_tenant_trgm", "memories_memory", "content", "status = 'needs_review'"),
    tenant=True,
)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [("memories", "0014_tenant_id_index")]

    operations = [
        *trigram_indexes(
            ("memory_subject_keys", "memories_memory", "subject"),
            ("memory_content_keys", "memories_memory", "content"),
            ("memory_queue_subject_keys", "memories_memory", "subject", "status = 'needs_review'"),
            ("memory_queue_content_keys", "memories_memory", "content", "status = 'needs_review'"),
            keys=True,
        ),
        migrations.RunPython(OLD.reverse_code, OLD.code),
    ]
