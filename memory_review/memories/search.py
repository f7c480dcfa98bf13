"""Case-insensitive "contains" over subjects and content that stays fast at any size (issue 17,
item 3): the queue's and the memories list's search and the audit trail's subject filter.

`field__textcontains=text` means what Django's `icontains` means (the text anywhere in the
column, any case), and each database answers it from an index where it has one:

* PostgreSQL: `UPPER(col) LIKE UPPER('%text%')`, which a trigram GIN index on `UPPER(col)`
  (pg_trgm, migration memories/0010) answers for any text of three characters or more; shorter
  text scans, as any substring search must. The review queue's memories have trigram indexes of
  their own (partial, `status = 'needs_review'`, memories/0011): the queue's search reads
  posting lists a twentieth the size, not the whole table's ANDed with the queue's 100,000.
  Oracle Text has no partial index; there the queue's search uses the table's.
* Oracle: `CONTAINS(col, '%word% & %word%') > 0` against an Oracle Text CONTEXT index with a
  substring word list (sql/oracle/030_indexes.sql) narrows the rows by each word of the text, and
  the same `UPPER LIKE` keeps the exact meaning (Oracle Text matches words, not substrings that
  span them). Text with no letter or digit is the LIKE alone.
* SQLite: the LIKE alone, a plain scan; fine for a development database, not for millions.
"""

import re

from django.db import connection, transaction
from django.db.models import CharField, F, Func, Lookup, Q, QuerySet, TextField
from django.db.models.lookups import IContains

# Oracle Text treats these as operators or wildcards; a word keeps only letters and digits.
_WORD = re.compile(r"\w+", re.UNICODE)


def text_query(text: str) -> str | None:
    """The Oracle Text query that narrows to rows holding every word of `text` somewhere
    (`%word%`: double-truncated, served by the substring index); None when there is no word."""
    words = [word for word in _WORD.findall(text.replace("_", " ")) if word]
    return " & ".join(f"%{word}%" for word in words) or None


class TextContains(Lookup):
    """`icontains`, answered from a text index where the database has one (module docstring)."""

    lookup_name = "textcontains"

    def _like(self) -> IContains:
        return IContains(self.lhs, self.rhs)

    def as_sql(self, compiler, connection):
        # Django's own icontains, as each backend writes it (UPPER(col::text) LIKE UPPER(..) on
        # PostgreSQL: the expression the trigram indexes are built on).
        return compiler.compile(self._like())

    def as_oracle(self, compiler, connection):
        like_sql, like_params = compiler.compile(self._like())
        query = text_query(str(self.rhs))
        if query is None:
            return like_sql, like_params
        lhs_sql, lhs_params = compiler.compile(self.lhs)
        return f"(CONTAINS({lhs_sql}, %s) > 0 AND {like_sql})", [*lhs_params, query, *like_params]


class TenantText(Func):
    """`(tenant_id)::text || '|' || UPPER((column)::text)`: what a tenant's text indexes hold on
    PostgreSQL (migration memories/0013). A trigram index of UPPER(column) alone answers every
    tenant's matches, and the planner, which cannot know that a word is common in one tenant and
    absent from another, read them all and threw the others away (a busy day's 50,000 memories
    of another tenant, 100 ms, for none of this one's); with the tenant leading the text, a search
    anchored on it reads this tenant's matches only."""

    arg_joiner = ")::text || '|' || UPPER(("
    template = "((%(expressions)s)::text))"
    output_field = TextField()

    def __init__(self, column: str):
        super().__init__(F("tenant_id"), F(column))


class _Like(Lookup):
    lookup_name = "like_upper"

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} LIKE UPPER({rhs})", [*lhs_params, *rhs_params]


def contains(column: str, text: str, *, tenant_id: int) -> Q:
    """The rows of `tenant_id` whose `column` holds `text`, any case, as `textcontains` says: on
    PostgreSQL through the tenant's own text index (TenantText), anchored on the tenant so its
    trigrams narrow to it; elsewhere `textcontains` (Oracle Text's CONTEXT index is filtered by
    tenant itself: sql/oracle/030_indexes.sql)."""
    if connection.vendor != "postgresql":
        return Q(tenant_id=tenant_id) & Q(**{f"{column}__textcontains": text})
    pattern = f"{tenant_id}|%{connection.ops.prep_for_like_query(text)}%"
    return Q(tenant_id=tenant_id) & Q(_Like(TenantText(column), pattern))


def _held(plans: tuple[str, ...]) -> tuple[str, str]:
    """The statements that turn `plans` off for the transaction's next statements, and back on
    (their defaults): SET LOCAL outlives a savepoint, so a request's other statements must get
    them back."""
    off = "SELECT " + ", ".join(f"set_config('{name}', 'off', true)" for name in plans)
    on = "SELECT " + ", ".join(f"set_config('{name}', 'on', true)" for name in plans)
    return off, on


# Read from a text index: no plan that walks an index or the table, filtering.
_FROM_TEXT_INDEX = _held(("enable_indexscan", "enable_indexonlyscan", "enable_seqscan"))
# Read along an index in order: no bitmap of a text index (a common word's 25,000 matches read,
# then sorted, to keep a stretch of 2,000 rows), no scan of the table.
_IN_ORDER = _held(("enable_bitmapscan", "enable_seqscan"))


def _held_to(plans: tuple[str, str], query: QuerySet) -> list:
    if connection.vendor != "postgresql":
        return list(query)
    off, on = plans
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(off)
        try:
            return list(query)
        finally:
            cursor.execute(on)


def in_order(rows: QuerySet) -> list:
    """`rows` (filtered by text, bounded to a stretch of an index in their order) read along that
    index, the text checked on each (PostgreSQL: held off the text index's bitmaps)."""
    return _held_to(_IN_ORDER, rows)


def fenced(rows: QuerySet, most: int, *, also: tuple[str, ...] = ()) -> list:
    """The primary keys (with `also`: (pk, *also) tuples) of up to `most` of `rows`, a query
    filtered by text, read from the text index: on PostgreSQL, the statement alone may not walk
    an index (enable_indexscan off for it). Left to choose, the planner, expecting a common word's
    thousands of matches, walked the tenant's index to stop at the limit, reading and throwing
    away every row that did not match (a tenant holding none: 200,001 rows, 290 to 490 ms); held
    to the text index, it reads the heap for matches only. Elsewhere, the query as it is."""
    found = _held_to(_FROM_TEXT_INDEX, rows.order_by().values_list("pk", *also)[:most])
    return [row[0] for row in found] if not also else [tuple(row) for row in found]


CharField.register_lookup(TextContains)
TextField.register_lookup(TextContains)


def trigram_indexes(*indexes: tuple[str, ...], tenant: bool = False):
    """Migration operations for (index name, table, column[, where]): a trigram GIN index on
    UPPER(column) (with `tenant`, on TenantText's expression: the tenant leading the text), of the
    rows `where` holds if given (a partial index), built CONCURRENTLY so a large table keeps
    taking writes meanwhile (the migration must be non-atomic). PostgreSQL only; Oracle's are in
    sql/oracle/030_indexes.sql."""
    from django.db import migrations

    def create(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            for name, table, column, *where in indexes:
                text = (
                    f"""((("tenant_id")::text || '|' || UPPER(("{column}")::text)))"""
                    if tenant
                    else f'UPPER("{column}")'
                )
                cursor.execute(
                    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} "
                    f"USING gin ({text} gin_trgm_ops)" + (f" WHERE {where[0]}" if where else "")
                )

    def drop(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            for name, *_ in indexes:
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")

    return [migrations.RunPython(create, drop)]
