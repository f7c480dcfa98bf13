"""Each tenant's text indexes (issue 29): the trigram indexes of subjects and content lead with
the tenant (search.TenantText), so a search reads its own tenant's matches. Indexed on the text
alone they held every tenant's: "relocation", written 50,000 times in one tenant's busy day,
cost a search in the other tenant, holding none, 100 ms of reading and throwing them away
(bench/pages.py, 200,000 memories a tenant). The text-only indexes go: nothing searches without
a tenant."""

from django.db import migrations

from memory_review.memories.search import trigram_indexes


# The text-only indexes (0010, 0011): dropped going forwards, built again going back.
(OLD,) = trigram_indexes(
    ("memory_subject_trgm", "memories_memory", "subject"),
    ("memory_content_trgm", "memories_memory", "content"),
    ("memory_queue_subject_trgm", "memories_memory", "subject", "status = 'needs_review'"),
    ("memory_queue_content_trgm", "memories_memory", "content", "status = 'needs_review'"),
)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [("memories", "0012_memory_event_index")]

    operations = [
        *trigram_indexes(
            ("memory_subject_tenant_trgm", "memories_memory", "subject"),
            ("memory_content_tenant_trgm", "memories_memory", "content"),
            ("memory_queue_subject_tenant_trgm", "memories_memory", "subject", "status = 'needs_review'"),
            ("memory_queue_content_tenant_trgm", "memories_memory", "content", "status = 'needs_review'"),
            tenant=True,
        ),
        migrations.RunPython(OLD.reverse_code, OLD.code),
    ]
