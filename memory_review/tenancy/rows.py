"""A tenant's one row of a settings table (the audit plan, the trust rules): locked and changed,
or made when the tenant has none."""

from collections.abc import Callable
from typing import TypeVar

from django.db import IntegrityError, transaction

Row = TypeVar("Row")


def save_one_row(model: type[Row], tenant, fill: Callable[[Row], None]) -> Row:
    """`fill` the tenant's row of `model` under a lock and save it. Two first saves at once both
    find no row to lock: the second's insert fails on the tenant's unique key once the first
    commits, and it tries again, finding the first's row and changing that."""
    try:
        return _save(model, tenant, fill)
    except IntegrityError:
        return _save(model, tenant, fill)


def _save(model, tenant, fill):
    with transaction.atomic():
        # Locked without a row limit (Oracle refuses FOR UPDATE with one): one row a tenant.
        row = next(iter(model.objects.for_tenant(tenant).select_for_update()), None) or model(tenant=tenant)
        fill(row)
        row.save()
        return row
