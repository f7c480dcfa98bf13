"""The review screens keep no model of their own: claims now belong to memory_review.workflow
(workflow.0001 takes the model over, table unchanged)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("review", "0002_postgres_rls"), ("workflow", "0001_claims_move_here")]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="Claim")], database_operations=[]),
    ]
