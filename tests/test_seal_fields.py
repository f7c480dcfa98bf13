"""A model's seal covers exactly the columns its rows were last sealed with: changing a model's
`seal_fields` without a migration that seals its existing rows again would make every old row
look edited around the application."""

import importlib
import pkgutil

from memory_review.audit import migrations
from memory_review.integrity import seals


def sealed_by_migrations() -> dict[str, tuple[str, ...]]:
    """Each kind's columns as the latest audit migration with a SEALED table sealed them."""
    found = {}
    for info in sorted(pkgutil.iter_modules(migrations.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{migrations.__name__}.{info.name}")
        for kind, _, fields in getattr(module, "SEALED", {}).values():
            found[kind] = tuple(fields)
    return found


def test_every_sealed_models_columns_are_those_a_migration_sealed_its_rows_with():
    models = {model.seal_kind: tuple(model.seal_fields) for model in seals.sealed_models()}

    assert models == sealed_by_migrations()


def test_a_baseline_seals_rows_as_their_writes_did_a_batch_at_a_time(acme):
    """What a migration that starts sealing a table runs (audit.0014): each row's baseline digest is
    the one verification computes, however the rows fall into batches."""
    from memory_review.audit import verification
    from memory_review.audit.models import Seal
    from memory_review.memories.models import MemoryChange
    from tests.factories import make_memory

    for _ in range(5):
        make_memory(acme)
    before = Seal.objects.filter(tenant=acme, kind="change").count()

    seals.baseline(MemoryChange, [acme.pk], batch=2)

    assert Seal.objects.filter(tenant=acme, kind="change", action="baseline").count() == before == 5
    assert verification.problem_in(acme) is None
