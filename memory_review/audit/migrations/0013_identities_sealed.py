"""Identities in the seal (issue 27, item 2; audit/identities.py): every user who counts in a
tenant (its members, and every staff member and superuser) is sealed once, as `baseline`, in
that tenant's ledger, as the users table holds them at upgrade. As with audit.0007, whoever runs
this migration holds the key and could have sealed anything (the threat model's "host
administrator"): a checkpoint line written after it vouches for the heads it leaves."""

from django.conf import settings
from django.db import migrations


def seal_who_counts(apps, schema_editor):
    from memory_review.audit import checkpoints, identities
    from memory_review.integrity import seals
    from memory_review.integrity.context import acting_as
    from memory_review.integrity.db_context import tenant_context

    tenants = list(apps.get_model("tenancy", "Tenant").objects.order_by("pk"))
    with acting_as("system:migration audit.0013"):
        for tenant in tenants:
            with tenant_context(tenant.pk):
                identities.seal_into(tenant.pk, identities.counted(tenant.pk), seals.BASELINE)
            if checkpoints.path_for(tenant).exists():
                checkpoints.write(tenant)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0012_transition_time_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("tenancy", "0006_two_person_since"),
    ]

    operations = [migrations.RunPython(seal_who_counts, migrations.RunPython.noop)]
