"""Statistics of UPPER(subject) and UPPER(content) (issue 29): a common word's walk along a list's
order checks the text with `UPPER(col) LIKE '%WORD%'` on each row (review/lists.py, `checked`),
and without statistics of that expression the planner took the word for one row in 200. It then
expected to read the whole stretch to fill a page, and, believing the first tenant's last day held
258,971 memories (it held 8,002: the other tenant's busy day was in the table's statistics),
walked the tenant's 666,519 rows through its plain index instead (the memories search 669 ms at
2,000,000 a tenant). With them it knows "invoice" for one in twenty and walks the order's index,
stopping at the page (6.6 ms). PostgreSQL only (extended statistics on expressions, 14 and
later); ANALYZE fills them now (1.4 s at 4,000,000 memories: a sample, not the table)."""

from django.db import migrations

STATISTICS = (
    ("memory_subject_upper_stats", "UPPER(subject::text)"),
    ("memory_content_upper_stats", "UPPER(content)"),
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for name, expression in STATISTICS:
            cursor.execute(f"CREATE STATISTICS IF NOT EXISTS {name} ON ({expression}) FROM memories_memory")
        cursor.execute("ANALYZE memories_memory")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for name, _ in STATISTICS:
            cursor.execute(f"DROP STATISTICS IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("memories", "0015_tenant_text_keys")]

    operations = [migrations.RunPython(create, drop)]
