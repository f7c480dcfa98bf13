"""Exports of a tenant's audit trail, streamed a row at a time (a million rows never sit in
memory), as JSONL or CSV. Each row carries everything its hash covers, so tools/verify_export.py
can check it with the standard library and the key alone (docs/audit.md).

JSONL: a first line describing the export (`"export": "memory-review audit trail"`, the tenant,
the filters, whether it is the complete chain, the chain's head when it was read), then one
object a transition with exactly the hashed fields, `key_id`, `created_at` and `hash`.
"""

import csv
import io
import json
from collections.abc import Iterator

from django.db.models import QuerySet
from django.utils import timezone

from memory_review.integrity.db_context import tenant_context
from memory_review.tenancy.models import Tenant

from .chain import HASHED_FIELDS, TEXT_FIELDS
from .models import AuditChain

FORMAT = "memory-review audit trail"
VERSION = 2  # 2: free text sealed through its keyed hash (reason_mac, request_id_mac), erasable
COLUMNS = (*HASHED_FIELDS, "key_id", "created_at", *TEXT_FIELDS, "erased_by", "hash")
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP, "CSV Injection"):
# such a cell is written with a ' in front, and so is one that starts with ' itself, so
# tools/verify_export.py reads every cell back exactly by dropping one leading '.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


READ = (*HASHED_FIELDS, *TEXT_FIELDS, "erased_by", "key_id", "created_at", "hash")


def row_record(row: dict) -> dict:
    """One transition as the export writes it, from its columns as read (READ)."""
    return {**row, "created_at": row["created_at"].isoformat(timespec="microseconds")}


def spreadsheet_safe(value) -> str:
    """A CSV cell no spreadsheet will run: empty for null, and a ' before a formula's start."""
    if value is None:
        return ""
    text = str(value)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def header(tenant: Tenant, *, filters: dict, complete: bool) -> dict:
    head = AuditChain.objects.for_tenant(tenant).first()
    return {
        "export": FORMAT,
        "version": VERSION,
        "tenant": tenant.slug,
        "tenant_id": tenant.pk,
        "exported_at": timezone.now().isoformat(timespec="seconds"),
        "filters": filters,
        "complete": complete,
        "head": {"seq": head.seq if head else 0, "hash": head.head_hash if head else "0" * 64},
    }


def _rows(tenant: Tenant, transitions: QuerySet) -> Iterator[dict]:
    # Streamed after the view returns, when the request's tenant context is already cleared:
    # set it again for the database's row-level security while the rows are read. Columns, not
    # model instances: a million of those cost more than the JSON.
    with tenant_context(tenant.pk):
        yield from transitions.order_by("seq").values(*READ).iterator(chunk_size=2000)


def jsonl(tenant: Tenant, transitions: QuerySet, *, filters: dict, complete: bool) -> Iterator[str]:
    with tenant_context(tenant.pk):
        first = header(tenant, filters=filters, complete=complete)
    yield json.dumps(first, sort_keys=True) + "\n"
    for row in _rows(tenant, transitions):
        yield json.dumps(row_record(row), sort_keys=True, ensure_ascii=False) + "\n"


def csv_lines(tenant: Tenant, transitions: QuerySet) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(COLUMNS)
    yield flush()
    for row in _rows(tenant, transitions):
        record = row_record(row)
        writer.writerow([spreadsheet_safe(record[name]) for name in COLUMNS])
        yield flush()
