"""Claims move from the review screens' app to the workflow's, table and all: the table keeps its
name (`review_claim`), its row-level security and its grants; only Django's record of which app
owns the model changes."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("review", "0002_postgres_rls"),
        ("memories", "0007_memory_ttl_index"),
        ("tenancy", "0005_tenant_is_active"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Claim",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("claimed_at", models.DateTimeField()),
                        ("expires_at", models.DateTimeField()),
                        ("released_at", models.DateTimeField(blank=True, null=True)),
                        ("release_note", models.CharField(blank=True, max_length=200, null=True)),
                        ("holder", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("memory", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="claims", to="memories.memory")),
                        ("released_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("tenant", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="tenancy.tenant")),
                    ],
                    options={
                        "db_table": "review_claim",
                        "indexes": [models.Index(fields=["memory", "expires_at"], name="claim_memory_expires_ix")],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("expires_at__gt", models.F("claimed_at"))), name="claim_expires_ck"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
