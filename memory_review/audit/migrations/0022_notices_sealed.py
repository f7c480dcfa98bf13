"""A delivery may carry a tenant's notice instead of a change (issue 31: memory health got worse),
so its seal covers which notice too; the notices themselves are sealed. The notices' table starts
empty; every existing delivery is sealed again with the new column, as `baseline` (as audit.0014
did), since its old seal would no longer match it, and a checkpoint line written after vouches for
the heads this leaves."""

from django.db import migrations

SEALED = {
    ("agents", "webhookdelivery"): ("delivery", "tenant_id", ("endpoint_id", "change_id", "notice_id", "msg_id", "created_at")),
    ("agents", "notice"): ("notice", "tenant_id", ("kind", "key", "data", "created_at")),
}  # fmt: skip


def seal_deliveries_again(apps, schema_editor):
    from memory_review.audit import checkpoints
    from memory_review.integrity import seals
    from memory_review.integrity.context import acting_as

    tenants = list(apps.get_model("tenancy", "Tenant").objects.order_by("pk"))
    kind, tenant_column, fields = SEALED[("agents", "webhookdelivery")]
    model = apps.get_model("agents", "webhookdelivery")
    model.seal_kind, model.seal_tenant, model.seal_fields = kind, tenant_column, fields
    with acting_as("system:migration audit.0022"):
        seals.baseline(model, [tenant.pk for tenant in tenants])
        for tenant in tenants:
            if checkpoints.path_for(tenant).exists():
                checkpoints.write(tenant)


class Migration(migrations.Migration):
    dependencies = [("audit", "0021_trust_rules_sealed"), ("agents", "0003_notices")]

    operations = [migrations.RunPython(seal_deliveries_again, migrations.RunPython.noop)]
