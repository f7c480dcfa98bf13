"""What a request carries, read into values every database the app runs on can hold (SQLite,
PostgreSQL, Oracle). Anything else is a `BadParameter` naming the parameter and what is wrong,
which the tenant pages and the API answer with a 400, never a 500 (issue 14, item 8):

* every parameter, read or not (`screen`): UTF-8 text, no NUL character, not huge;
* integers (`object_id`, `object_ids`, `id_problem`, `IdField`, a URL's `<id:...>`): inside the
  column's range on every database;
* times (`moment`, `DateTimeField`, `DateField`): inside the years 1 to 9999 once their UTC offset
  is applied, with a day to spare each side;
* JSON (`json_loads`, `json_too_deep`): nested at most `JSON_MAX_DEPTH` deep, checked before parsing,
  and no integer longer than `JSON_MAX_DIGITS` digits.
"""

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import unquote_to_bytes

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations
from django.utils import timezone
from django.utils.dateparse import parse_datetime

# The longest value of one query parameter: page links and filters are short, and gunicorn stops
# at a 4094-byte request line anyway.
QUERY_MAX_CHARS = 10_000
# The longest form field, unless a rewrite may be longer (API_MAX_TEXT_CHARS): a bulk action's
# signed ticket for REVIEW_BULK_MAX memories is about 10 KB.
FORM_MAX_CHARS = 64_000
JSON_MAX_DEPTH = 32  # the deepest of our own formats is 3; Python's parser recurses a frame a level
JSON_MAX_DIGITS = 40  # an integer's; twice a 64-bit column's longest (a field's own check says which)

# Each integer column type's range, the tightest over the databases: Django's table (PostgreSQL's)
# inside SQLite's 64 bits and Oracle's NUMBER(11) (user ids, integers) and NUMBER(19) (big ones).
SQLITE_RANGE = (-(2**63), 2**63 - 1)
ORACLE_DIGITS = {
    "AutoField": 11,
    "BigAutoField": 19,
    "BigIntegerField": 19,
    "IntegerField": 11,
    "PositiveBigIntegerField": 19,
    "PositiveIntegerField": 11,
    "PositiveSmallIntegerField": 11,
    "SmallAutoField": 5,
    "SmallIntegerField": 11,
}

# A day inside Python's and Oracle's calendars (years 1 to 9999, in UTC), so that showing a time
# in any time zone (offsets stay under a day) cannot leave the calendar either.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)


class BadParameter(ValueError):
    """A request parameter that cannot be read; a 400 naming it."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"{name}: {problem}")
        self.name, self.problem = name, problem


# -- every parameter ------------------------------------------------------------------------------


def screen(request) -> None:
    """BadParameter for the first query parameter or form field, read by the view or not, that is
    not UTF-8 text, holds a NUL character or is huge."""
    query = request.META.get("QUERY_STRING", "").encode("latin-1", "replace")  # as it came (PEP 3333)
    sources = [(query, request.GET, QUERY_MAX_CHARS)]
    if request.method == "POST":
        form = request.content_type == "application/x-www-form-urlencoded"
        sources.append((request.body if form else b"", request.POST, form_max_chars()))
    for raw, decoded, limit in sources:
        _screen_raw(raw)
        for name, values in decoded.lists():
            for text in (name, *values):
                if problem := text_problem(text, limit):
                    raise BadParameter(shown_name(name), problem)
    for name, uploads in request.FILES.lists() if request.method == "POST" else ():
        for upload in uploads:
            if problem := text_problem(upload.name or "", 255):
                raise BadParameter(shown_name(name), f"its file name {problem}")


def form_max_chars() -> int:
    return max(FORM_MAX_CHARS, settings.API_MAX_TEXT_CHARS)


def text_problem(text: str, limit: int) -> str | None:
    if "\x00" in text:  # PostgreSQL refuses NUL in text
        return "contains a NUL character"
    if len(text) > limit:
        return f"is {len(text)} characters long; the limit is {limit}"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "is not UTF-8 text (a lone surrogate)"
    return None


def _screen_raw(raw: bytes) -> None:
    """Django decodes a bad byte to U+FFFD and moves on; the raw query says which parameter had it."""
    if raw.isascii() and b"%" not in raw:
        return
    for pair in raw.split(b"&"):
        name, _, value = pair.partition(b"=")
        for part in (name, value):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                readable = unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8", "replace")
                raise BadParameter(shown_name(readable), "is not UTF-8 text") from None


def shown_name(name: str) -> str:
    """A parameter's name as a message can quote it: a crafted one, cut short and escaped."""
    if name.isprintable() and len(name) <= 40:
        return name
    return repr(name[:40]) + ("…" if len(name) > 40 else "")


def _quoted(raw: str) -> str:
    return repr(raw if len(raw) <= 40 else raw[:40] + "…")


# -- integers -------------------------------------------------------------------------------------


def column_range(field) -> tuple[int, int]:
    """The values an integer column (a foreign key: its target's) holds on every database."""
    if field.is_relation:
        field = field.target_field
    kind = field.get_internal_type()
    low, high = BaseDatabaseOperations.integer_field_ranges[kind]
    oracle = 10 ** ORACLE_DIGITS[kind] - 1
    return max(low, -oracle, SQLITE_RANGE[0]), min(high, oracle, SQLITE_RANGE[1])


def column_max(model, name: str = "id") -> int:
    return column_range(model._meta.get_field(name))[1]


def id_problem(raw: str, high: int) -> str | None:
    """Why `raw` is not an id from 1 to `high`, or None."""
    if not (raw.isascii() and raw.isdigit()):  # str.isdigit() alone takes "²"
        return "is not an id (a whole number)"
    if len(raw) > len(str(high)) or not 1 <= int(raw) <= high:
        return f"is not an id: ids run from 1 to {high}"
    return None


def _key(raw: str, name: str, high: int) -> int:
    if problem := id_problem(raw, high):
        raise BadParameter(name, f"{_quoted(raw)} {problem}")
    return int(raw)


def object_id(data, name: str, model, column: str = "id") -> int | None:
    """The id `name` carries (None when absent or blank), one `model`'s `column` can hold."""
    raw = data.get(name, "").strip()
    return _key(raw, name, column_max(model, column)) if raw else None


def object_ids(data, name: str, model, *, most: int) -> list[int]:
    """A comma-separated list of at most `most` ids."""
    raw = [part.strip() for part in data.get(name, "").split(",") if part.strip()]
    if len(raw) > most:
        raise BadParameter(name, f"lists {len(raw)} ids; the most is {most}")
    high = column_max(model)
    return [_key(part, name, high) for part in raw]


class PathId:
    """The `<id:...>` path converter, registered once (api/apps.py) for every id in a
    URL. Django's `<int:...>` takes any run of digits, so an id past every database's bigint reached
    the query as a 500. This one takes any run of digits too, but hands the view an `UnreadableId`
    for one no id column holds, which `path_ids` (called by tenant_view and api_view, after the
    log-in and tenant checks) turns into a 400 naming the parameter."""

    regex = "[0-9]+"

    def to_python(self, value: str):
        return UnreadableId(value) if id_problem(value, ID_MAX) else int(value)

    def to_url(self, value) -> str:
        return str(value)


@dataclass(frozen=True)
class UnreadableId:
    """A URL's id that no id column holds (not an int: a view that skipped `path_ids` fails)."""

    raw: str


# Every id in a URL is a BigAutoField's (DEFAULT_AUTO_FIELD), on every database.
ID_MAX = column_range(models.BigAutoField(primary_key=True))[1]


def path_ids(kwargs: dict) -> None:
    """BadParameter for the first of a URL's ids that no id column holds."""
    for name, value in kwargs.items():
        if isinstance(value, UnreadableId):
            raise BadParameter(name, f"{_quoted(value.raw)} {id_problem(value.raw, ID_MAX)}")


class IdField(forms.IntegerField):
    """A form's id of one `model`'s `column`: from 1 to what that column holds everywhere."""

    def __init__(self, model, column: str = "id", **kwargs):
        super().__init__(min_value=1, max_value=column_max(model, column), **kwargs)


# -- times ----------------------------------------------------------------------------------------


def moment_problem(at: datetime) -> str | None:
    """Why an aware time cannot be stored or shown, or None."""
    try:
        utc = at.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        return f"is outside {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d} once its UTC offset is applied"
    return None


def moment(data, name: str) -> datetime | None:
    """The time `name` carries (None when absent or blank): ISO 8601, with or without a UTC offset
    (without one, the site's time zone), inside the calendar every database holds."""
    raw = data.get(name, "").strip()
    if not raw:
        return None
    try:
        at = parse_datetime(raw)
    except ValueError:  # well formed, but no such day, hour or offset
        at = None
    if at is None:
        raise BadParameter(name, f"{_quoted(raw)} is not a date and time (YYYY-MM-DD HH:MM)")
    if timezone.is_naive(at):
        at = timezone.make_aware(at)
    if problem := moment_problem(at):
        raise BadParameter(name, f"{_quoted(raw)} {problem}")
    return at


class DateTimeField(forms.DateTimeField):
    """A form's time inside the calendar every database holds."""

    def to_python(self, value):
        at = super().to_python(value)
        if at is not None and (problem := moment_problem(at)):
            raise ValidationError(f"This time {problem}.", code="invalid")
        return at


class DateField(forms.DateField):
    """A form's day, at any hour in any time zone inside the calendar every database holds."""

    def to_python(self, value):
        day = super().to_python(value)
        if day is not None and not EARLIEST.date() <= day <= LATEST.date():
            raise ValidationError(
                f"Choose a day from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d}.", code="invalid"
            )
        return day


# -- JSON -----------------------------------------------------------------------------------------

# A JSON string (to its closing quote, or the end of the text when it has none): its brackets are
# text. The pattern cannot fail once it starts, so it never backtracks.
_STRING = re.compile(rb'"[^"\\]*(?:\\(?:.|\Z)[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_AS_PARENS = bytes.maketrans(b"[]{}", b"()()")


class Unreadable(ValueError):
    """JSON from outside that `json_loads` does not hand to the parser, or stops it reading."""


class TooDeep(Unreadable):
    pass


class TooLong(Unreadable):
    pass


def json_too_deep(text: str | bytes, limit: int = JSON_MAX_DEPTH) -> bool:
    """Whether parsing `text` would nest deeper than `limit`, found without parsing it: strings
    dropped, brackets kept, then each round removes the innermost pairs. Brackets left unclosed
    count as levels too (the parser would descend into them before failing)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    brackets = _STRING.sub(b"", data).translate(_AS_PARENS, _NOT_BRACKETS)
    run = b"(" * (limit + 1)  # that many opened in a row: too deep whatever follows
    depth = 0
    while b"()" in brackets:
        if run in brackets or depth == limit:
            return True
        depth += 1
        brackets = brackets.replace(b"()", b"")
    return depth + brackets.count(b"(") > limit


def json_loads(text: str | bytes, limit: int = JSON_MAX_DEPTH):
    """json.loads for text from outside: TooDeep past `limit` levels, TooLong for an integer of
    more than JSON_MAX_DIGITS digits (both Unreadable, a ValueError)."""
    if json_too_deep(text, limit):
        raise TooDeep(f"nested deeper than {limit} levels")
    return json.loads(text, parse_int=_integer)


def _integer(digits: str) -> int:
    # Python stops reading an integer of 4,300 digits with a ValueError of its own; far shorter
    # ones still reach each field's check, which names the field and its range.
    length = len(digits.lstrip("-"))
    if length > JSON_MAX_DIGITS:
        raise TooLong(f"an integer {length:,} digits long; the most read is {JSON_MAX_DIGITS}")
    return int(digits)
