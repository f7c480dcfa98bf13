"""Claims are tenant data: PostgreSQL row-level security as on every tenant table."""

from django.db import migrations

from memory_review.tenancy import rls

TABLES = ["review_claim"]


class Migration(migrations.Migration):
    dependencies = [("review", "0001_claims")]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: rls.enable(schema_editor, TABLES),
            lambda apps, schema_editor: rls.disable(schema_editor, TABLES),
        )
    ]
