"""What else an event wrote, in id order (issue 29): lineage's "from the same event" ordered by
the primary key walked the second tenant's page past every row of the first (200,163 rows
removed, 40 ms, where the first tenant's took 2.4 ms, at 200,000 memories a tenant). Leading
with the event, the index hands over the event's memories already in id order."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0011_queue_text_search"),
        ("tenancy", "0006_two_person_since"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["source_event", "id"], name="memory_event_ix"),
        ),
    ]
