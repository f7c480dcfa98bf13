"""Keyset paging: a page starts after (or ends before) the last row seen, by the list's order, so
page 200 costs what page 1 costs. Each order used here has an index that ends in its columns.

Not django-cursor-pagination: it compares every column as text and ORs in IS NULL tests, which
keep the database from starting its index scan at the cursor (and text comparison would reach an
NCLOB cast on Oracle). The columns ordered on here are never NULL.
"""

import base64
import json
import math
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q, QuerySet
from django.utils import timezone

from memory_review import params


class BadCursor(params.BadParameter):
    """A page link (`after` or `before`) that was damaged or does not belong to this list."""


@dataclass(frozen=True)
class Page:
    rows: list
    next_cursor: str | None
    prev_cursor: str | None
    # A search's page that stopped short (searched_page): it read this many rows past its last
    # match without filling the page; its cursor goes on from the last of them.
    looked_past: int = 0

    @property
    def has_other_pages(self) -> bool:
        return bool(self.next_cursor or self.prev_cursor)


def _columns(ordering: tuple[str, ...]) -> list[tuple[str, bool]]:
    """(column, descending) for each term; one direction for all, so one index serves."""
    columns = [(term.lstrip("-"), term.startswith("-")) for term in ordering]
    if len({descending for _, descending in columns}) != 1:
        raise ValueError(f"keyset paging needs one direction for every column: {ordering}")
    return columns


def encode(row, ordering: tuple[str, ...]) -> str:
    values = [getattr(row, column) for column, _ in _columns(ordering)]
    # Full precision: a cursor one microsecond off would skip or repeat a row.
    values = [value.isoformat() if isinstance(value, datetime) else value for value in values]
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str, queryset: QuerySet, ordering: tuple[str, ...], *, name: str = "after") -> list:
    """The row a page link (the parameter `name`) points at, as values its columns can hold."""
    try:
        values = params.json_loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)), limit=1)
    except (ValueError, UnicodeDecodeError) as exc:  # TooDeep and bad base64 are ValueErrors
        raise BadCursor(name, "this page link is damaged") from exc
    columns = _columns(ordering)
    if not isinstance(values, list) or len(values) != len(columns):
        raise BadCursor(name, "this page link belongs to another list or order")
    decoded = []
    for (column, _), value in zip(columns, values, strict=True):
        field = queryset.model._meta.get_field(column)
        try:
            python = field.to_python(value)
        except (ValidationError, TypeError, ValueError, OverflowError) as exc:
            raise BadCursor(name, f"this page link has a bad {column}") from exc
        if python is None:
            raise BadCursor(name, f"this page link has no {column}")
        if not _storable(field, python):
            raise BadCursor(name, f"this page link has a {column} no database holds")
        decoded.append(python)
    return decoded


def _storable(field, value) -> bool:
    """Whether a cursor's value fits its column everywhere (else SQLite or Oracle fails on it)."""
    if isinstance(field, models.IntegerField | models.ForeignKey):
        low, high = params.column_range(field)
        return low <= value <= high
    if isinstance(field, models.DateTimeField):
        aware = value if timezone.is_aware(value) else timezone.make_aware(value)
        return params.moment_problem(aware) is None
    if isinstance(field, models.FloatField):
        return math.isfinite(value)
    return True


def _beyond(columns: list[tuple[str, bool]], values: list, *, backwards: bool) -> Q:
    """Rows after `values` in the order (before, if `backwards`). The leading column's bound
    comes first on its own, so the database can start its index scan there."""
    descending = columns[0][1] != backwards
    strict, loose = ("lt", "lte") if descending else ("gt", "gte")
    lead, first = columns[0][0], values[0]
    after = Q()
    equal = Q()
    for (column, _), value in zip(columns, values, strict=True):
        after |= equal & Q(**{f"{column}__{strict}": value})
        equal &= Q(**{column: value})
    return Q(**{f"{lead}__{loose}": first}) & after


def keyset_page(
    queryset: QuerySet,
    ordering: tuple[str, ...],
    *,
    size: int,
    after: str | None = None,
    before: str | None = None,
    shown: QuerySet | None = None,
) -> Page:
    """One page of `queryset` in `ordering`: the first, or the one after / before a cursor.

    `shown`: the page is found on `queryset`'s own rows and order columns alone, then its rows
    are read from `shown` (with the joins a page displays) by primary key. The joins then never
    steer the plan that finds the page: PostgreSQL, guessing ten votes for any memory, joined
    all 5,000 of a guideline's to sort them, where the (memory, -id) index gives 21 at once."""
    if shown is not None:
        found = keyset_page(
            queryset.select_related(None).only(*(term.lstrip("-") for term in ordering)),
            ordering, size=size, after=after, before=before,
        )  # fmt: skip
        read = shown.in_bulk([row.pk for row in found.rows])
        return Page([read[row.pk] for row in found.rows], found.next_cursor, found.prev_cursor)
    columns = _columns(ordering)
    if before:
        reverse = _reversed(ordering)
        bound = _beyond(columns, decode(before, queryset, ordering, name="before"), backwards=True)
        rows = list(queryset.filter(bound).order_by(*reverse)[: size + 1])
        more_before = len(rows) > size
        rows = rows[:size][::-1]
        return Page(
            rows,
            next_cursor=encode(rows[-1], ordering) if rows else None,
            prev_cursor=encode(rows[0], ordering) if rows and more_before else None,
        )
    if after:
        queryset = queryset.filter(
            _beyond(columns, decode(after, queryset, ordering, name="after"), backwards=False)
        )
    rows = list(queryset.order_by(*ordering)[: size + 1])
    more_after = len(rows) > size
    rows = rows[:size]
    return Page(
        rows,
        next_cursor=encode(rows[-1], ordering) if rows and more_after else None,
        prev_cursor=encode(rows[0], ordering) if rows and after else None,
    )


# Rows of a list, in its order and without its text filter, that a search reads at most for a
# page: the misses it reads and throws away stay under bench/pages.py's 10,000, and a page costs
# the same whatever the tenant holds.
WALK = 2000


def searched_page(
    matching: QuerySet,
    unsearched: QuerySet,
    ordering: tuple[str, ...],
    *,
    size: int,
    after: str | None = None,
    before: str | None = None,
) -> Page:
    """keyset_page for a list filtered by text (`matching`; `unsearched` is the same list without
    the text) whose matches are too many to read whole: the next WALK rows of `unsearched` from
    the cursor, read along the order's index between the cursor and the stretch's last row, the
    text checked on each (search.in_order). A common word fills a page there. Where the matches
    lie past a stretch of other rows, the page holds what it found and says how far it looked
    (`looked_past`), and its cursor goes on from there: the reader asks for the next stretch, as
    a log search does.

    Walked to a page's end, the order's index threw away every row a day's burst of other
    memories put ahead of the matches (57,911 for "invoice", 65-71 ms at 200,000, ten times more
    at 2,000,000); sorted from the text index, every match is read for a page of fifty (29,000
    for "invoice", 160 ms). Neither is bounded by the page; this is."""
    from memory_review.memories.search import in_order

    columns = _columns(ordering)
    order = _reversed(ordering) if before else ordering
    cursor = before or after
    name = "before" if before else "after"
    bound = (
        _beyond(columns, decode(cursor, matching, ordering, name=name), backwards=bool(before))
        if cursor
        else Q()
    )
    names = [column for column, _ in columns]
    last, stretch = _stretch(unsearched.filter(bound), order, WALK)
    stretch &= bound
    rows = in_order(matching.filter(stretch).order_by(*order)[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    short = not more and bool(last)  # the stretch read without filling the page
    edge = encode(SimpleNamespace(**dict(zip(names, last, strict=True))), ordering) if short else None
    if before:
        rows = rows[::-1]
        return Page(
            rows,
            next_cursor=encode(rows[-1], ordering) if rows else None,
            prev_cursor=edge or (encode(rows[0], ordering) if rows and more else None),
            looked_past=WALK if short else 0,
        )
    return Page(
        rows,
        next_cursor=edge or (encode(rows[-1], ordering) if rows and more else None),
        prev_cursor=encode(rows[0], ordering) if rows and after else None,
        looked_past=WALK if short else 0,
    )


# Rows of a list, in its order, a common word's matches are first counted among (first_matches).
# 8,000: a word the sample finds in a seventh of the memories has its thousand there, and the
# stretch stays under what bench/pages.py --walks flags (10,000 rows thrown away).
COUNT_WALK = 8_000


def first_matches(
    matching: QuerySet,
    unsearched: QuerySet,
    ordering: tuple[str, ...],
    most: int,
    *,
    enough: int | None = None,
    also: tuple[str, ...] = (),
) -> tuple[list, bool]:
    """Up to `most` of `matching` (a list filtered by text; `unsearched` the same without it),
    (pk, *also) each, found among the list's first COUNT_WALK rows in its order, then, short of
    `most` (or of `enough`, if given), among its last too, each stretch read along the order's
    index with the text checked on each (search.in_order); and whether the first stretch was all
    the list holds. For a word the tenant's sample calls common: half the memories hold
    "loyalty", so 2,000 rows hold a thousand matches, where the text index's bitmap of its
    1,000,000 cost 220 ms before its first row (2,000,000 memories a tenant); the last rows too,
    for a tenant whose newest are a busy day about something else. Bounded either way: a tenant
    holding none reads 2 x COUNT_WALK rows."""
    from memory_review.memories.search import in_order

    found: dict = {}  # by key: the two stretches overlap in a list shorter than both
    for order in (ordering, _reversed(ordering)):
        last, stretch = _stretch(unsearched, order, COUNT_WALK)
        for row in in_order(matching.filter(stretch).order_by(*order).values_list("pk", *also)[:most]):
            found.setdefault(row[0], tuple(row))
        if not last:
            return list(found.values()), True
        if len(found) >= min(most, enough or most):
            break
    return list(found.values())[:most], False


def page_among(
    found: list[tuple],
    ordering: tuple[str, ...],
    *,
    size: int,
    after: str | None,
    before: str | None,
    shown: QuerySet,
) -> Page:
    """keyset_page over rows already read as (pk, *the order's columns): the page is cut in
    Python, then its rows are read from `shown` by primary key. For a set known to be small
    (the audit trail's moves of a few memories): reading them back by a list of thousands of
    ids to sort them cost more than reading them."""
    descending = _columns(ordering)[0][1]

    def key(row):
        return row[1:]

    rows = sorted(found, key=key, reverse=descending)
    if after:
        edge = tuple(decode(after, shown, ordering, name="after"))
        rows = [row for row in rows if (key(row) < edge if descending else key(row) > edge)]
    more_before = False
    if before:
        edge = tuple(decode(before, shown, ordering, name="before"))
        rows = [row for row in rows if (key(row) > edge if descending else key(row) < edge)]
        more_before, rows = len(rows) > size, rows[-size:]
    more_after = not before and len(rows) > size
    rows = rows[:size]
    read = shown.in_bulk([row[0] for row in rows])
    page = [read[row[0]] for row in rows if row[0] in read]
    return Page(
        page,
        next_cursor=encode(page[-1], ordering) if page and (more_after or before) else None,
        prev_cursor=encode(page[0], ordering) if page and (after or more_before) else None,
    )


def _stretch(rows: QuerySet, order: tuple[str, ...], length: int):
    """The `length`-th of `rows` in `order` (its order columns' values; an index-only read of
    that many entries) and the condition that holds `rows` to the stretch up to it, it included;
    (None, Q()) when fewer are left: the stretch is the rest."""
    columns = _columns(order)
    last = list(rows.order_by(*order).values_list(*(column for column, _ in columns))[length - 1 : length])
    if not last:
        return None, Q()
    return list(last[0]), _up_to(columns, list(last[0]), backwards=False)


def _up_to(columns: list[tuple[str, bool]], values: list, *, backwards: bool) -> Q:
    """Rows up to `values` in the order, them included (back to them, if `backwards`): the
    leading column's bound on its own, so the index scan stops there."""
    descending = columns[0][1] != backwards
    lead = columns[0][0]
    return Q(**{f"{lead}__{'gte' if descending else 'lte'}": values[0]}) & ~_beyond(
        columns, values, backwards=backwards
    )


def _reversed(ordering: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(("" if term.startswith("-") else "-") + term.lstrip("-") for term in ordering)
