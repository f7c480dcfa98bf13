"""The demo's data for the tests that open on it: seeded once a session, copied back after.

`seed_demo` takes about 4 s on PostgreSQL (some 700 sealed rows, each its own round trips), and
some fifty tests open on it (the browser tests, erasure, words not ids): three and a half minutes
of the PostgreSQL pass. A test's data is gone after it (rolled back, or flushed by a transactional
test), so on PostgreSQL the first seed's rows are copied out (COPY, every table it wrote) and later
tests that start from the same state get them copied back in: the seed's own rows, ids, seals and
chain, with the triggers off while they go in (the replica role, as tests/factories.py writes
past the application) and each sequence moved past them.

The copy is used only where it gives what seeding would: the database as the first seed found it
(the same tables holding the same number of rows, the seed's own tables empty). Otherwise, and on
SQLite (a tenth of the cost there), it seeds. tests/test_demo_data.py checks the copy against a
fresh seed, row for row.
"""

from functools import cache

from django.apps import apps
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection, transaction

from tests.factories import around_the_application

# (history?, the row count of each table the seed found non-empty) -> the tables it wrote, as COPY data
_COPIES: dict[tuple, list[tuple[str, bytes]]] = {}


def seed_demo(*, history: bool = False) -> None:
    """What `manage.py seed_demo [--no-history]` writes, into this test's database."""
    if connection.vendor != "postgresql" or not _superuser():
        _seed(history)
        return
    before = _row_counts()
    found = (history, tuple(sorted((table, n) for table, n in before.items() if n)))
    copy = _COPIES.get(found)
    if copy is not None:
        _copy_in(copy)
        return
    _seed(history)
    after = _row_counts()
    if any(before[table] and after[table] != before[table] for table in after):
        return  # it added to tables that held rows already: only seeding gives that again
    _COPIES[found] = _copy_out([table for table in after if after[table] and not before[table]])


def _seed(history: bool) -> None:
    call_command("seed_demo", *([] if history else ["--no-history"]), verbosity=0)


@cache
def _superuser() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        return bool(cursor.fetchone()[0])


def _tables() -> list[str]:
    with connection.cursor() as cursor:
        return [t.name for t in connection.introspection.get_table_list(cursor) if t.type == "t"]


def _row_counts() -> dict[str, int]:
    quote = connection.ops.quote_name
    tables = _tables()
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(f"SELECT %s, count(*) FROM {quote(t)}" for t in tables), tables)
        return dict(cursor.fetchall())


def _copy_out(tables: list[str]) -> list[tuple[str, bytes]]:
    quote = connection.ops.quote_name
    copied = []
    with connection.cursor() as cursor:
        for table in tables:
            with cursor.cursor.copy(f"COPY {quote(table)} TO STDOUT (FORMAT binary)") as copy:
                copied.append((table, b"".join(bytes(chunk) for chunk in copy)))
    return copied


def _copy_in(copied: list[tuple[str, bytes]]) -> None:
    quote = connection.ops.quote_name
    by_table = {m._meta.db_table: m for m in apps.get_models(include_auto_created=True)}
    with transaction.atomic():  # SET LOCAL holds in a transaction only (a transactional test has none)
        with around_the_application() as cursor:  # triggers and foreign keys off
            for table, data in copied:
                with cursor.cursor.copy(f"COPY {quote(table)} FROM STDIN (FORMAT binary)") as copy:
                    copy.write(data)
        models = [by_table[table] for table, _ in copied if table in by_table]
        with connection.cursor() as cursor:
            for sql in connection.ops.sequence_reset_sql(no_style(), models):
                cursor.execute(sql)
