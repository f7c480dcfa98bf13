"""The records that carry forgetting to agents are sealed (issue 27, item 3): the change feed's
rows, which change each webhook delivery carries to which endpoint, and each endpoint's cursor.
Existing rows are sealed once, as `baseline` (as audit.0007 did for the first sealed tables), and
a checkpoint line written after vouches for the heads this leaves."""

from django.db import migrations

SEALED = {
    ("memories", "memorychange"): ("change", "tenant_id", ("seq", "memory_id", "kind", "transition_id", "created_at")),
    ("agents", "webhookdelivery"): ("delivery", "tenant_id", ("endpoint_id", "change_id", "msg_id", "created_at")),
    ("agents", "webhookendpoint"): ("webhook_endpoint", "tenant_id", ("url", "kinds", "description", "secret", "created_by", "created_at", "cursor", "disabled_at", "disabled_by", "removed_at", "removed_by")),
}  # fmt: skip


def seal_the_feed(apps, schema_editor):
    from memory_review.audit import checkpoints
    from memory_review.integrity import seals
    from memory_review.integrity.context import acting_as

    tenants = list(apps.get_model("tenancy", "Tenant").objects.order_by("pk"))
    with acting_as("system:migration audit.0014"):
        for (app_label, model_name), (kind, tenant_column, fields) in SEALED.items():
            model = apps.get_model(app_label, model_name)
            model.seal_kind, model.seal_tenant, model.seal_fields = kind, tenant_column, fields
            seals.baseline(model, [tenant.pk for tenant in tenants])
        for tenant in tenants:
            if checkpoints.path_for(tenant).exists():
                checkpoints.write(tenant)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0013_identities_sealed"),
        ("memories", "0011_queue_text_search"),
        ("agents", "0002_webhooks"),
    ]

    operations = [migrations.RunPython(seal_the_feed, migrations.RunPython.noop)]
