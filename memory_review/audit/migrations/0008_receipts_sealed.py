"""Agents' usage receipts are sealed (issue 16): their table starts empty, so there is nothing to
baseline; SEALED records the columns their seals cover (tests/test_seal_fields.py)."""

from django.db import migrations

SEALED = {
    ("agents", "receipt"): ("receipt", "tenant_id", ("memory_id", "version", "response_id", "user_id", "agent_id", "thread_id", "used_at", "erased_at", "created_at")),
}  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("audit", "0007_seal_existing_rows"), ("agents", "0001_receipts")]

    operations = []
