"""Indexes: every foreign key of ours is served by one, and none is served twice.

An index is written on every INSERT, and on every UPDATE that cannot stay on its page: a
verdict's table takes a hundred rows an event, and each redundant index on it is a hundred more
index writes (and their WAL) for nothing a query needs. A single-column index on a foreign key
is redundant where another index leads with the same column: that one serves the joins, the
checks a delete of the parent makes, and Oracle's foreign-key locking (an index whose leading
column is the key).

Read from the models (what migrations build; `makemigrations --check` holds the two together),
so the same on every backend: a conditional index or constraint serves nothing here, as Oracle
builds none (DESIGN §8)."""

import io

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import models

OURS = "memory_review."
# Single-column indexes kept beside a wider one that leads with the same column, and why.
KEPT = {
    "memories_memory.source_event_id": (
        "an event's other memories are counted on the lineage page (LIMIT 1001); without this "
        "index PostgreSQL 15 costs memory_event_ix's bitmap (three columns, a timestamp among "
        "them) above a sequential scan, and reads the table from its start for a large event "
        "(seen on bench/pages.py's hub event at 200,000 memories a tenant)"
    ),
}


def _our_models():
    for model in apps.get_models():
        if model.__module__.startswith(OURS) and model._meta.managed and not model._meta.proxy:
            yield model


def _leading(model) -> dict[str, list[str]]:
    """For each column some index of two or more columns leads with, those indexes' names."""
    found: dict[str, list[str]] = {}
    meta = model._meta
    named = [(index.name, index.fields, index) for index in meta.indexes] + [
        (constraint.name, constraint.fields, constraint)
        for constraint in meta.constraints
        if isinstance(constraint, models.UniqueConstraint)
    ]
    for name, fields, index in named:
        if (
            getattr(index, "condition", None) is not None
            or getattr(index, "expressions", ())
            or len(fields) < 2
        ):
            continue
        column = meta.get_field(fields[0].lstrip("-")).column
        found.setdefault(column, []).append(name)
    for together in meta.unique_together:
        if len(together) > 1:
            found.setdefault(meta.get_field(together[0]).column, []).append("unique_together")
    return found


def _single(field) -> bool:
    """An index of the field's own (a foreign key's by default), not a unique one."""
    return field.concrete and field.db_index and not field.unique and not field.primary_key


def test_no_single_column_index_repeats_one_a_wider_index_leads_with():
    repeated = []
    for model in _our_models():
        leading = _leading(model)
        for field in model._meta.local_concrete_fields:
            if (
                _single(field)
                and field.column in leading
                and f"{model._meta.db_table}.{field.column}" not in KEPT
            ):
                served = ", ".join(sorted(leading[field.column]))
                repeated.append(f"{model._meta.db_table}.{field.column} (served by {served})")
    assert repeated == [], "indexed on its own, and first in a wider index: " + "; ".join(repeated)


def test_every_foreign_key_leads_an_index():
    bare = []
    for model in _our_models():
        leading = _leading(model)
        for field in model._meta.local_concrete_fields:
            if not isinstance(field, models.ForeignKey) or not field.db_constraint:
                continue
            if field.db_index or field.unique or field.column in leading:
                continue
            bare.append(f"{model._meta.db_table}.{field.column}")
    assert bare == [], "foreign keys no index leads with: " + ", ".join(bare)


def test_every_index_kept_beside_a_wider_one_is_still_both():
    """A reason in KEPT holds only while the index it excuses is there and repeats a wider one."""
    stale = []
    for name in KEPT:
        table, column = name.split(".")
        model = next(m for m in _our_models() if m._meta.db_table == table)
        field = next(f for f in model._meta.local_concrete_fields if f.column == column)
        if not (_single(field) and column in _leading(model)):
            stale.append(name)
    assert stale == [], f"KEPT names indexes that no longer repeat a wider one: {stale}"


def test_the_checks_see_what_they_look_for():
    """Both rules read the models as they must: the verdict's key to its memory is served by
    verdict_memory_ix, and its key to a shadow policy only by an index of its own."""
    verdict = apps.get_model("assessments", "Verdict")
    leading = _leading(verdict)
    assert "verdict_memory_ix" in leading["memory_id"]
    assert "verdict_event_memory_uq" in leading["event_id"]
    assert "shadow_policy_id" not in leading
    assert _single(verdict._meta.get_field("shadow_policy"))


@pytest.mark.django_db(transaction=True)  # SQLite: a schema editor works outside a transaction only
def test_the_index_cut_drops_indexes_and_touches_no_foreign_key():
    """DropOwnIndex, both ways, as `migrate` would run it on this database: back, each field's
    index made again under the name Django gave it; neither way a foreign key dropped and checked
    again (Django's AlterField would). Forwards on Oracle is sql/oracle/010_schema.sql's DROP
    INDEXes (tests/test_oracle_sql.py)."""
    out = io.StringIO()
    call_command("sqlmigrate", "assessments", "0018", backwards=True, stdout=out)
    backwards = out.getvalue()
    assert "FOREIGN KEY" not in backwards and "DROP CONSTRAINT" not in backwards
    made = [line for line in backwards.splitlines() if line.startswith("CREATE INDEX")]
    assert len(made) == 5, backwards
    assert any('"assessments_verdict_memory_id_4ad9ce2a"' in line for line in made), made
