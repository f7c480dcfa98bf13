"""Webhook endpoints are sealed (issue 16): their table starts empty, so there is nothing to
baseline; SEALED records the columns their seals cover (tests/test_seal_fields.py)."""

from django.db import migrations

SEALED = {
    ("agents", "webhookendpoint"): ("webhook_endpoint", "tenant_id", ("url", "kinds", "description", "secret", "created_by", "created_at", "disabled_at", "disabled_by", "removed_at", "removed_by")),
}  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("audit", "0008_receipts_sealed"), ("agents", "0002_webhooks")]

    operations = []
