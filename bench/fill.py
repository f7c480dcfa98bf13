"""Many rows of one model written at once, for the benchmarks' big tables: `COPY` on PostgreSQL,
`executemany` elsewhere. bulk_create builds a model instance and seals every row (integrity/seals.py):
at twenty million verdicts that is hours; a COPY of the same rows, minutes.

Rows written here go around the application: they are not sealed, and nothing checks them as
the writers do. A bench fills what it times this way, never what it verifies.

Ids are handed out here (`next_ids`), so a caller knows the ids of what it wrote without reading
them back; `reset_sequences` moves each table's sequence past them when the filling is done.
"""

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice

from django.core.management.color import no_style
from django.db import connection, models

CHUNK = 50_000


def next_ids(model: type[models.Model], count: int) -> range:
    """`count` ids no row of `model` has yet, in order."""
    top = model.objects.aggregate(top=models.Max("pk"))["top"] or 0
    return range(top + 1, top + 1 + count)


def write(model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence]) -> int:
    """Insert `rows` (tuples in the order of `columns`, which name database columns, `id` first).
    Every other column takes its field's default; a column with no default that may not be null is
    an error here, before anything is written."""
    fields = {f.column: f for f in model._meta.concrete_fields}
    unknown = [c for c in columns if c not in fields]
    if unknown:
        raise ValueError(f"{model.__name__} has no column {', '.join(unknown)}")
    rest = [f for c, f in fields.items() if c not in columns]
    defaults = []
    for field in rest:
        value = field.get_default() if field.has_default() else None
        if value is None and not field.null:
            raise ValueError(f"{model.__name__}.{field.column} needs a value: it has no default")
        defaults.append(value)
    names = [*columns, *(f.column for f in rest)]
    tail = tuple(defaults)
    full = (tuple(row) + tail for row in rows)
    if connection.vendor == "postgresql":
        return _copy(model._meta.db_table, names, full, [fields[n] for n in names])
    return _executemany(model, names, full, [fields[n] for n in names])


def _chunks(rows: Iterable[tuple]) -> Iterator[list[tuple]]:
    rows = iter(rows)
    while chunk := list(islice(rows, CHUNK)):
        yield chunk


def _copy(table: str, names: list[str], rows: Iterable[tuple], fields: list[models.Field]) -> int:
    as_json = {i for i, f in enumerate(fields) if isinstance(f, models.JSONField)}
    quoted = ", ".join(connection.ops.quote_name(n) for n in names)
    written = 0
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")  # None and "" both go as NULL (DESIGN §8)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            f"COPY {connection.ops.quote_name(table)} ({quoted}) FROM STDIN (FORMAT csv)"
        ) as copy:
            for chunk in _chunks(rows):
                if as_json:
                    chunk = [
                        tuple(
                            json.dumps(v) if i in as_json and v is not None else v for i, v in enumerate(row)
                        )
                        for row in chunk
                    ]
                writer.writerows(chunk)
                copy.write(buffer.getvalue())
                buffer.seek(0)
                buffer.truncate()
                written += len(chunk)
    return written


def _executemany(model, names: list[str], rows: Iterable[tuple], fields: list[models.Field]) -> int:
    quoted = ", ".join(connection.ops.quote_name(n) for n in names)
    marks = ", ".join(["%s"] * len(names))
    sql = f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({quoted}) VALUES ({marks})"
    written = 0
    with connection.cursor() as cursor:
        for chunk in _chunks(rows):
            cursor.executemany(
                sql,
                [
                    tuple(f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True))
                    for row in chunk
                ],
            )
            written += len(chunk)
    return written


@contextmanager
def filling(*tables: type[models.Model]) -> Iterator[None]:
    """While big tables fill on PostgreSQL: their foreign keys' triggers off (a deferred check per
    row would queue tens of millions of events) and their secondary indexes dropped, then built
    again, each in one pass, from the definitions the database itself gave. Elsewhere: nothing."""
    if connection.vendor != "postgresql":
        yield
        return
    names = [m._meta.db_table for m in tables]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes i WHERE tablename = ANY(%s) AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)",
            [names],
        )
        indexes = cursor.fetchall()
        for name, _ in indexes:
            cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
        cursor.execute("SET session_replication_role = replica")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET session_replication_role = DEFAULT")
            cursor.execute("SET maintenance_work_mem = '1GB'")
            for _, definition in indexes:
                cursor.execute(definition)
            cursor.execute("RESET maintenance_work_mem")


def reset_sequences(*tables: type[models.Model]) -> None:
    """Each table's id sequence past the ids given out here (PostgreSQL; SQLite needs nothing)."""
    statements = connection.ops.sequence_reset_sql(no_style(), list(tables))
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
