"""The verdict's keys to its tenant, assessment, memory, event and shadow policy are no longer
checked by the database (models.Verdict says why). Forwards only drops the five constraints: no
row is read and no index changes (its indexes stay: verdict_tenant_ix, verdict_assessment_ix,
verdict_memory_ix, verdict_event_memory_uq and the shadow policy's own). Backwards adds them again,
which checks every vote."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("assessments", "0018_no_repeated_indexes"),
        ("memories", "0019_no_repeated_indexes"),
        ("tenancy", "0007_no_repeated_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="verdict",
            name="assessment",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="verdicts",
                to="assessments.assessment",
            ),
        ),
        migrations.AlterField(
            model_name="verdict",
            name="event",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="verdicts",
                to="memories.sourceevent",
            ),
        ),
        migrations.AlterField(
            model_name="verdict",
            name="memory",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="verdicts",
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            model_name="verdict",
            name="shadow_policy",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="assessments.policyversion",
            ),
        ),
        migrations.AlterField(
            model_name="verdict",
            name="tenant",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="tenancy.tenant",
            ),
        ),
    ]
