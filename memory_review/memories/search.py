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

import functools
import random
import re
import time

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


# The tenant's text keys (migration memories/0015): each trigram pg_trgm finds in the text,
# prefixed with the tenant ("7:loc"), so that a GIN index of them holds one posting list a
# tenant a trigram. With the tenant only leading the text (memories/0013), its trigrams were
# shared: "relocation", written 500,000 times in one tenant's busy day, cost a search in a tenant
# holding none 67 ms at 2,000,000 memories a tenant, the index walking the other tenant's
# matches to learn that none was this tenant's; with keys of its own, 0.03 ms.
TEXT_KEYS = "memory_text_keys"
# The keys a row holding `body` anywhere must hold: the trigrams of `body` that do not reach past
# its two ends (where the row's text may go on: "invoice" inside "invoices" has no "ce "),
# found as those also in `body` wrapped in two different letters. Those padded at an end are
# gone from one wrapping or the other, also when pg_trgm hashes a trigram of non-ASCII letters
# ("  é" shows as 0xc23c9d, its space no longer to be seen).
TEXT_PROBE = "memory_text_probe"


def text_functions_sql(schema: str) -> list[str]:
    """The statements that define the two functions, pg_trgm's `show_trgm` named by its schema
    (`schema`) so an index expression never depends on a search_path. The keys are one
    expression of C functions (a trigram never holds '|': pg_trgm splits words at anything but
    letters and digits): 6.7 us a subject, where unnesting them in SQL took 9.3."""
    trigrams = f"{schema}.show_trgm"
    return [
        f"""CREATE OR REPLACE FUNCTION {TEXT_KEYS}(tenant bigint, body text) RETURNS text[]
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT string_to_array(
            tenant::text || ':' || array_to_string({trigrams}(body), '|' || tenant::text || ':'), '|') $$""",
        f"""CREATE OR REPLACE FUNCTION {TEXT_PROBE}(tenant bigint, body text) RETURNS text[]
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT ARRAY(SELECT tenant::text || ':' || g FROM (
            SELECT unnest({trigrams}(body))
            INTERSECT SELECT unnest({trigrams}('q' || body || 'q'))
            INTERSECT SELECT unnest({trigrams}('z' || body || 'z'))) AS found(g) ORDER BY g) $$""",
    ]


class TextKeys(Func):
    """`memory_text_keys(tenant_id, (column)::text)`: what a tenant's text indexes hold on
    PostgreSQL (memories/0015), written as the indexes are so the planner knows them."""

    function = TEXT_KEYS
    arg_joiner = ", ("
    template = "%(function)s(%(expressions)s)::text)"
    output_field = TextField()

    def __init__(self, column: str):
        super().__init__(F("tenant_id"), F(column))


class _Holds(Lookup):
    """`keys @> ARRAY[...]`: the row's text keys hold every one asked for."""

    lookup_name = "holds_keys"
    prepare_rhs = False  # a list of keys, not a text

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::text[]", [*lhs_params, list(self.rhs)]


@functools.lru_cache(maxsize=1024)
def probe(text: str, *, tenant_id: int) -> tuple[str, ...]:
    """The tenant's text keys a row holding `text` must hold (TEXT_PROBE); none for text with no
    run of three letters or digits, which no trigram narrows ("ab", "t-4"). The same for the same
    text always: asked once a process, not once a column a search (subject, then content)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {TEXT_PROBE}(%s, %s)", [tenant_id, text])
        (keys,) = cursor.fetchone()
    return tuple(keys)


def checked(column: str, text: str) -> Q:
    """`text` in `column`, any case, checked on each row read, no index asked: for a walk along
    another index that reads a bounded stretch (review/paging.py), where the text keys computed
    for every row (pg_trgm's trigrams of each) cost fifty times the check."""
    return Q(**{f"{column}__icontains": text})


def contains(column: str, text: str, *, tenant_id: int) -> Q:
    """The rows of `tenant_id` whose `column` holds `text`, any case, as `textcontains` says: on
    PostgreSQL through the tenant's own text keys (TextKeys), asked for the keys of the text's
    rarest word only (`narrowest`), the whole text checked on each row they find; elsewhere
    `textcontains` (Oracle Text's CONTEXT index is filtered by tenant itself:
    sql/oracle/030_indexes.sql)."""
    if connection.vendor != "postgresql":
        return Q(tenant_id=tenant_id) & Q(**{f"{column}__textcontains": text})
    # UPPER(col) LIKE UPPER('%text%'), on each row the keys found: they say a row may match.
    exact = checked(column, text)
    keys = probe(narrowest(column, text, tenant_id=tenant_id), tenant_id=tenant_id)
    if not keys:
        return Q(tenant_id=tenant_id) & exact  # the tenant's rows read, as any short text must
    # The keys hold the tenant: "1:loc" is no key of tenant 11. No `tenant_id = ` beside them,
    # which the planner ANDed with the tenant's whole index (2,000,000 entries, 38 ms).
    return Q(_Holds(TextKeys(column), keys)) & exact


# A trigram GIN index reads every trigram's posting list in full, and a bitmap of all of them is
# built before the first row: a memory's whole subject, "billing 0000044 for cust-44", cost 114
# to 165 ms at 2,000,000 memories (11,158 index pages: "BIL", "FOR", "CUS" are in most subjects),
# where its rarest word alone, "0000044", cost 1.6 ms (38 pages) for the same one match.
SAMPLE_SECONDS = 600
SAMPLE_ROWS = 2000
# The most memories a tenant's sample is drawn from by their keys (sample): its keys read whole.
KEYED_MOST = 200_000
_SAMPLES: dict[tuple[str, int], tuple[float, list[str]]] = {}
_TABLE = "memories_memory"


def sample(column: str, tenant_id: int) -> list[str]:
    """About SAMPLE_ROWS of the tenant's memories' `column`, upper-cased, drawn from pages spread
    over the table (TABLESAMPLE SYSTEM: a few hundred pages read, not the tenant's rows), or, for
    a tenant those pages would hold too few of, from its keys; read once every SAMPLE_SECONDS a
    process; none but on PostgreSQL. A tenant's own: a word that a
    busy day made common in one tenant is not common in the next (the table's statistics said
    "relocation" was in 12% of subjects, of a tenant holding none)."""
    if connection.vendor != "postgresql":
        return []
    now = time.monotonic()
    kept = _SAMPLES.get((column, tenant_id))
    if kept is not None and now - kept[0] < SAMPLE_SECONDS:
        return kept[1]
    table, text = connection.ops.quote_name(_TABLE), f"UPPER({connection.ops.quote_name(column)}::text)"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT greatest(reltuples, 1) FROM pg_class WHERE oid = '{_TABLE}'::regclass")
        (rows,) = cursor.fetchone()
        cursor.execute(
            "SELECT coalesce(sum(n), 0)::bigint FROM memories_memorytally WHERE tenant_id = %s", [tenant_id]
        )
        (held,) = cursor.fetchone()
        percent = min(100.0, 100.0 * SAMPLE_ROWS / rows)
        if held * percent / 100 < SAMPLE_ROWS / 4 and held <= KEYED_MOST:
            # A small tenant in a large table: the table's pages would hold a handful of its rows
            # (a tenant of 10,000 among 4,000,000: five). Its keys instead (the tenant's index
            # alone), SAMPLE_ROWS of them at random, read by key: a sample as good as any tenant's.
            cursor.execute(f"SELECT id FROM {table} WHERE tenant_id = %s", [tenant_id])
            keys = [key for (key,) in cursor.fetchall()]
            chosen = random.sample(keys, min(len(keys), SAMPLE_ROWS))
            cursor.execute(f"SELECT {text} FROM {table} WHERE id = ANY(%s)", [chosen])
        else:
            cursor.execute(
                f"SELECT {text} FROM {table} TABLESAMPLE SYSTEM ({percent:.6f})"
                " WHERE tenant_id = %s LIMIT %s",
                [tenant_id, 5 * SAMPLE_ROWS],
            )
        values = [value for (value,) in cursor.fetchall()]
    _SAMPLES[(column, tenant_id)] = (now, values)
    return values


def share(column: str, word: str, *, tenant_id: int) -> float | None:
    """The share of the tenant's sampled `column` values that hold `word`, any case; None
    without a sample."""
    values = sample(column, tenant_id)
    if not values:
        return None
    word = word.upper()
    return sum(word in value for value in values) / len(values)


# A word of fewer characters is too short to narrow alone: "001" is one trigram, whose posting
# list holds every number with "001" in it (89,450 memories of a tenant at 2,000,000, 69 ms
# rechecked, where "invoice 001" whole found 619 in 30), and a sample drawn by pages, which finds
# a word clustered in a few pages or misses it, called it rare in one process and not the next.
# "0001", two trigrams, narrows: 1,825 found in 19 ms, where "warranty 0001" whole read 38-45.
_SHORTEST = 4


def narrowest(column: str, text: str, *, tenant_id: int) -> str:
    """A word of `text` (split on spaces) that none of the tenant's sampled memories hold in
    `column` (rare: under about one in SAMPLE_ROWS), the longest such; else `text` itself, whose
    trigrams together narrow more than any one of its words ("invoice 001": "001" alone left
    89,450 rows to check, the two words 1,000). The candidates' subjects are judged by the
    memories' sample: a hint, never the answer. Any part of the text is a condition every match
    meets, so reading the index for it alone, then checking the whole text, finds the same rows."""
    words = [word for word in text.split() if len(word) >= _SHORTEST]
    if len(words) < 2:
        return text
    values = sample(column, tenant_id)
    rare = [word for word in words if not any(word.upper() in value for value in values)]
    return max(rare, key=len) if values and rare else text


def common(column: str, text: str, *, tenant_id: int, at_least: float) -> bool:
    """Whether the tenant's sample says every word of `text` is common in `column`: at least
    `at_least` of the sampled values hold its rarest word. A hint for choosing how to count, as
    the planner's own estimate is, never taken for the count."""
    found = text_share(column, text, tenant_id=tenant_id)
    return found is not None and found >= at_least


def text_share(column: str, text: str, *, tenant_id: int) -> float | None:
    """The share of the tenant's sampled `column` values that hold the rarest word of `text`."""
    return share(column, narrowest(column, text, tenant_id=tenant_id), tenant_id=tenant_id)


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


def trigram_indexes(*indexes: tuple[str, ...], tenant: bool = False, keys: bool = False):
    """Migration operations for (index name, table, column[, where]): a trigram GIN index on
    UPPER(column) (with `tenant`, on `tenant_id || '|' || UPPER(column)`, memories/0013; with
    `keys`, on the tenant's text keys, TextKeys, defining their functions first), of the rows
    `where` holds if given (a partial index), built CONCURRENTLY so a large table keeps taking
    writes meanwhile (the migration must be non-atomic). PostgreSQL only; Oracle's are in
    sql/oracle/030_indexes.sql."""
    from django.db import migrations

    def create(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            if keys:
                schema = "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
                cursor.execute(schema)
                for statement in text_functions_sql(cursor.fetchone()[0]):
                    cursor.execute(statement)
            for name, table, column, *where in indexes:
                if keys:
                    text = f'{TEXT_KEYS}("tenant_id", ("{column}")::text)'
                elif tenant:
                    text = f"""((("tenant_id")::text || '|' || UPPER(("{column}")::text))) gin_trgm_ops"""
                else:
                    text = f'UPPER("{column}") gin_trgm_ops'
                cursor.execute(
                    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} "
                    f"USING gin ({text})" + (f" WHERE {where[0]}" if where else "")
                )

    def drop(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            for name, *_ in indexes:
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")

    return [migrations.RunPython(create, drop)]
