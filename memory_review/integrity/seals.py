"""Seals: a keyed record of every row a decision rests on (docs/audit.md, "Seals").

A model that subclasses `Sealed` names the columns its seal covers (`seal_fields`). Every write
to such a row through the ORM (save, create, update, bulk_create, bulk_update, delete) appends, in
the same transaction, one row per row written to the tenant's ledger (`audit.Seal`): the row's
kind and id, what happened, who wrote it, and a digest: HMAC-SHA256, under the audit key, of the
sealed columns as the database holds them after the write (read back, so the digest is computed
from exactly what verification will read). A kind written many rows at a time (`seal_grouped`:
an event's votes) gets one ledger row per write instead, naming each row with its digest
(`grouped`). Ledger rows form a keyed per-tenant chain like the transitions' and each records how
far the transitions' chain had reached, binding the two.

Verification (audit/checks.py) compares every sealed row with its latest seal: a row edited
around the application no longer matches its digest, a row inserted around it has no seal, a
sealed row deleted leaves a seal without a row, and a row put back as it once was differs from
its latest seal. The key never lives in the database, so none of that can be repaired there.

A write and its seal commit or fail together: the blocks here join the caller's transaction
without savepoints of their own (each would cost two round trips on every sealed write).

This module is the lowest of the audit trail: models of every layer subclass `Sealed`, so it
imports no model; it finds the ledger's models through the app registry.
"""

import hashlib
import hmac
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from datetime import UTC, date, datetime
from functools import lru_cache, partial
from typing import ClassVar

from django.apps import apps
from django.core.exceptions import EmptyResultSet
from django.db import IntegrityError, connections, models, router, transaction
from django.db.models import sql
from django.utils import timezone

from memory_review.integrity.db_context import current_tenant, tenant_context

from .context import current_actor
from .heads import GENESIS, ChainBroken, canonical, links_inline, lock_head, written
from .keys import Keyring, keyring

CREATE, CHANGE, ERASE, DELETE, BASELINE = "create", "change", "erase", "delete", "baseline"
DELETED_DIGEST_FIELDS = {"deleted": True}


class Sealed(models.Model):
    """A row whose every write is sealed. Subclasses set `seal_kind` (a short stable name, kept
    in the ledger) and `seal_fields` (attribute names: `memory_id`, not `memory`)."""

    seal_kind: ClassVar[str] = ""
    seal_fields: ClassVar[tuple[str, ...]] = ()
    # The column naming the tenant whose ledger seals the row ("pk" for the tenant itself).
    seal_tenant: ClassVar[str] = "tenant_id"
    # Rows written many at a time (an event's hundred votes) are sealed by one ledger row for the
    # write (a group: `members`), not one each. Not for a kind whose rows are checked one at a
    # time before acting (`unchanged`): finding a row's group costs a scan.
    seal_grouped: ClassVar[bool] = False

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        update_fields = kwargs.get("update_fields")
        action = CREATE if self._state.adding else CHANGE
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using, savepoint=False):
            super().save(*args, **kwargs)
            if update_fields is None:  # every column written from this instance
                seal_objects(type(self), [self], action, using=using)
            elif touches(type(self), update_fields):
                # The columns not written may be newer in the database than in this instance (an
                # erasure blanked a reason since it was read): seal what the database holds.
                seal_rows(type(self), [self.pk], action, using=using)

    def delete(self, *args, **kwargs):
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using, savepoint=False):
            gone = [(self.pk, _tenant_of(self))]
            result = super().delete(*args, **kwargs)
            seal_deleted(type(self), gone, using=using)
        return result


class SealedQuerySet(models.QuerySet):
    """Bulk writes seal what they wrote, as `Sealed.save()` does for one row."""

    def update(self, **kwargs):
        if not touches(self.model, kwargs):
            return super().update(**kwargs)
        # Refused as Django's update() refuses them, before anything is written.
        self._not_support_combined_queries("update")
        if self.query.is_sliced:
            raise TypeError("Cannot update a query once a slice has been taken.")
        with transaction.atomic(using=self.db, savepoint=False):
            if connections[self.db].vendor in RETURNS_FROM_UPDATE and not self.model._meta.parents:
                found = _update_returning(self, kwargs)
                _seal(self.model, found, CHANGE, using=self.db)
                self._result_cache = None  # as Django's update(): what was read before is stale
                return len(found)
            # `of`: a filter across a nullable join would otherwise lock (or, on PostgreSQL, refuse) more.
            pks = list(self.order_by().select_for_update(of=("self",)).values_list("pk", flat=True))
            count = self.model._base_manager.using(self.db).filter(pk__in=pks).update(**kwargs)
            seal_rows(self.model, pks, CHANGE, using=self.db)
        return count

    update.alters_data = True

    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        with transaction.atomic(using=self.db, savepoint=False):
            if not connections[self.db].features.can_return_rows_from_bulk_insert:
                for obj in objs:  # Oracle returns no ids from a bulk insert: one at a time
                    obj.save(force_insert=True, using=self.db)
                return objs
            created = super().bulk_create(objs, *args, **kwargs)
            seal_objects(self.model, created, CREATE, using=self.db)
        return created

    def insert_values(self, names: Sequence[str], rows: Sequence[Sequence]) -> list[int]:
        """Insert rows given as plain values of `names` (attribute names: every sealed field, and
        every column without a default) and seal them from those values: their ids, in the order
        given. For a batch written on every event, where a model instance a row and Django's
        per-value preparation cost more than the rows' seals. Values are written as given:
        numbers, strings, aware datetimes; no field's pre_save runs, so no auto_now. PostgreSQL:
        one INSERT ... SELECT ... RETURNING of one parameter (`json_rows`); elsewhere Django's
        raw insert, a batch at a time (a row at a time where the backend returns no ids from one)."""
        rows = [tuple(row) for row in rows]
        if not rows:
            return []
        model, connection = self.model, connections[self.db]
        fields = [model._meta.get_field(name) for name in names]
        with transaction.atomic(using=self.db, savepoint=False):
            pks = (_insert_json if connection.vendor == "postgresql" else _insert_raw)(
                model, fields, rows, using=self.db
            )
            at = {name: i for i, name in enumerate(names)}
            tenant, sealed = at[model.seal_tenant], [at[name] for name in model.seal_fields]
            found = (
                (pk, row[tenant], tuple(row[i] for i in sealed)) for pk, row in zip(pks, rows, strict=True)
            )
            _seal(model, found, CREATE, using=self.db)
        return pks

    def update_values(self, names: Sequence[str], rows: Sequence[Sequence]) -> int:
        """Write `names` (attribute names of columns no seal covers) of the rows given as plain
        values, each led by its primary key: the rows written. For a batch written on every event
        (the memories' checks), where bulk_update's CASE for each row and column cost more to
        build than the UPDATE took. PostgreSQL: one UPDATE ... FROM one parameter (`json_rows`);
        elsewhere bulk_update. The values name their rows: a filtered queryset is refused, where
        one backend would narrow them by its filters and the other not."""
        rows = [tuple(row) for row in rows]
        if touches(self.model, names):
            raise ValueError(f"update_values writes no sealed column; {', '.join(names)} include one")
        if self.query.has_filters() or self.query.is_sliced:
            raise TypeError("update_values writes the rows its values name: call it on the manager")
        if not rows:
            return 0
        model, connection = self.model, connections[self.db]
        fields = [model._meta.pk, *(model._meta.get_field(name) for name in names)]
        if connection.vendor != "postgresql":
            objs = [model(**{f.attname: value for f, value in zip(fields, row, strict=True)}) for row in rows]
            return self.bulk_update(objs, list(names))
        quote = connection.ops.quote_name
        table, pk = quote(model._meta.db_table), quote(model._meta.pk.column)
        columns = ", ".join(f"{quote(f.column)} = r.{quote(f.column)}" for f in fields[1:])
        sql = f"UPDATE {table} SET {columns} FROM ({json_rows(connection, fields)}) AS r"
        with connection.cursor() as cursor:
            cursor.execute(f"{sql} WHERE {table}.{pk} = r.{pk}", [as_json(rows)])
            return cursor.rowcount

    def bulk_update(self, objs, fields, *args, **kwargs):
        objs = list(objs)
        if not touches(self.model, fields):
            return super().bulk_update(objs, fields, *args, **kwargs)
        with transaction.atomic(using=self.db, savepoint=False):
            # On a plain queryset: Django's bulk_update runs update(), which here would seal too.
            plain = models.QuerySet(self.model, using=self.db)
            count = plain.bulk_update(objs, fields, *args, **kwargs)
            # Read back: the values may be expressions the database computed.
            seal_rows(self.model, [obj.pk for obj in objs], CHANGE, using=self.db)
        return count

    def delete(self):
        with transaction.atomic(using=self.db, savepoint=False):
            gone = list(self.order_by().values_list("pk", _tenant_column(self.model)))
            result = super().delete()
            seal_deleted(self.model, gone, using=self.db)
        return result

    delete.alters_data = True


# Backends whose UPDATE returns the rows it wrote: a sealed update is then one statement, not a
# locked read of the ids, the UPDATE and a read back.
RETURNS_FROM_UPDATE = {"postgresql", "sqlite"}


def _update_returning(queryset: SealedQuerySet, values: dict) -> list[tuple[int, int, tuple]]:
    """UPDATE ... RETURNING, for a model without parent tables (its update is one statement):
    (pk, tenant id, sealed values) of each row written, as the database holds them after the
    write (expressions' values included), converted from the driver's types by the converters a
    read through `rows()` uses, so that both give one digest."""
    model = queryset.model
    query = queryset.query.chain(sql.UpdateQuery)
    query.add_update_values(values)
    query.annotations = {}
    compiler = query.get_compiler(queryset.db)
    try:
        statement, params = compiler.as_sql()
    except EmptyResultSet:  # a filter nothing can match (pk__in=[]): nothing to write
        return []
    names = ("pk", *(() if model.seal_tenant == "pk" else (model.seal_tenant,)), *model.seal_fields)
    fields = [model._meta.pk if name == "pk" else model._meta.get_field(name) for name in names]
    quote = compiler.connection.ops.quote_name
    returning = ", ".join(quote(field.column) for field in fields)
    with compiler.connection.cursor() as cursor:
        cursor.execute(f"{statement} RETURNING {returning}", params)
        found = cursor.fetchall()
    converters = compiler.get_converters([field.get_col(model._meta.db_table) for field in fields])
    if converters:
        found = compiler.apply_converters(found, converters)
    if model.seal_tenant == "pk":
        return sorted((pk, pk, tuple(values)) for pk, *values in found)
    return sorted((pk, tenant_id, tuple(values)) for pk, tenant_id, *values in found)


def _insert_json(model, fields, rows, *, using: str, returning: bool = True) -> list[int]:
    """PostgreSQL: the rows in one INSERT of one parameter (`json_rows`); their ids, in order."""
    connection = connections[using]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) {json_rows(connection, fields)}"
    with connection.cursor() as cursor:
        if not returning:
            cursor.execute(sql, [as_json(rows)])
            return []
        cursor.execute(f"{sql} RETURNING {quote(model._meta.pk.column)}", [as_json(rows)])
        return [pk for (pk,) in cursor.fetchall()]


def _insert_raw(model, fields, rows, *, using: str) -> list[int]:
    connection, manager = connections[using], model._base_manager
    objs = [model(**{field.attname: value for field, value in zip(fields, row, strict=True)}) for row in rows]
    size = 1  # Oracle returns no ids from a multi-row insert
    if connection.features.can_return_rows_from_bulk_insert:
        size = max(1, connection.ops.bulk_batch_size(fields, objs))
    pks, returning = [], [model._meta.pk]
    for start in range(0, len(objs), size):
        batch = objs[start : start + size]
        pks.extend(pk for (pk,) in manager._insert(batch, fields, returning, raw=True, using=using))
    return pks


def sealed_models() -> list[type[Sealed]]:
    """Every sealed model, in a fixed order (verification walks them in it)."""
    return sorted(
        (model for model in apps.get_models() if issubclass(model, Sealed)), key=lambda m: m.seal_kind
    )


def model_for(kind: str) -> type[Sealed] | None:
    return next((model for model in sealed_models() if model.seal_kind == kind), None)


def touches(model: type[Sealed], names: Iterable[str]) -> bool:
    """Whether writing these fields (names or attribute names) changes what the seal covers."""
    attnames = {model._meta.get_field(name).attname for name in names}
    return bool(attnames & set(model.seal_fields))


# -- digests ---------------------------------------------------------------------------------


def _float(value) -> float | str:
    value = float(value)
    # Fifteen significant digits survive every backend's storage (Oracle's NUMBER included).
    return float(f"{value:.15g}") if math.isfinite(value) else str(value)


def _json(value):
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dict):
        return {str(key): _json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    return value


def _text(value):
    return value if value not in (None, "") else None  # '' is NULL on Oracle


def _moment(value):
    if type(value) is datetime and value.tzinfo is UTC:  # as the database reads it back: the most common
        return value.isoformat(timespec="microseconds")
    if isinstance(value, datetime):
        if timezone.is_naive(value):
            value = timezone.make_aware(value, UTC)
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    return value.isoformat() if isinstance(value, date) else value


def _converter(field: models.Field) -> Callable:
    """How a column's value enters the digest: the same on every backend for the same value,
    and the same for a value as assigned before a save (a string for a date, say) as read back."""
    if isinstance(field, models.FloatField):
        return _float
    if isinstance(field, models.DateTimeField | models.DateField):
        return lambda value: _moment(field.to_python(value) if isinstance(value, str) else value)
    if isinstance(field, models.JSONField):
        return _json
    if isinstance(field, models.BooleanField):
        return bool
    if isinstance(field, models.CharField | models.TextField):
        return _text
    if isinstance(field, models.DecimalField):
        return lambda value: format(value.normalize(), "f")
    return int  # integers and foreign keys


def converters(model: type[Sealed]) -> list[Callable]:
    cache = model.__dict__.get("_seal_converters")
    if cache is None:
        fields = [next(f for f in model._meta.concrete_fields if f.attname == n) for n in model.seal_fields]
        cache = [_converter(field) for field in fields]
        model._seal_converters = cache
    return cache


def digest(model: type[Sealed], pk: int, tenant_id: int, values: Sequence, key: bytes) -> str:
    """HMAC-SHA256 of a row's sealed columns, as read by `rows()`."""
    fields = {
        name: None if value is None else convert(value)
        for name, value, convert in zip(model.seal_fields, values, converters(model), strict=True)
    }
    payload = {"kind": model.seal_kind, "id": pk, "tenant_id": tenant_id, "fields": fields}
    return hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()


def deleted_digest(model: type[Sealed], pk: int, tenant_id: int, key: bytes) -> str:
    payload = {"kind": model.seal_kind, "id": pk, "tenant_id": tenant_id, "fields": DELETED_DIGEST_FIELDS}
    return hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()


def _tenant_column(model: type[Sealed]) -> str:
    return "pk" if model.seal_tenant == "pk" else model.seal_tenant


def _tenant_of(obj: Sealed) -> int:
    return obj.pk if obj.seal_tenant == "pk" else getattr(obj, obj.seal_tenant)


def rows(queryset, *, chunk_size: int = 2000) -> Iterator[tuple[int, int, tuple]]:
    """(pk, tenant id, sealed values) for each row: what digests are computed from, at write
    time and at verification alike."""
    model = queryset.model
    if model.seal_tenant == "pk":
        for pk, *values in queryset.values_list("pk", *model.seal_fields).iterator(chunk_size=chunk_size):
            yield pk, pk, tuple(values)
    else:
        names = ("pk", model.seal_tenant, *model.seal_fields)
        for pk, tenant_id, *values in queryset.values_list(*names).iterator(chunk_size=chunk_size):
            yield pk, tenant_id, tuple(values)


# -- writing ---------------------------------------------------------------------------------


def seal_objects(model: type[Sealed], objs: Iterable[Sealed], action: str, *, using: str = "default") -> None:
    """Seal rows just saved from these instances (their values are what was written)."""
    found = (
        (obj.pk, _tenant_of(obj), tuple(getattr(obj, name) for name in model.seal_fields)) for obj in objs
    )
    _seal(model, found, action, using=using)


def seal_rows(model: type[Sealed], pks: Iterable[int], action: str, *, using: str = "default") -> None:
    """Seal these rows as the database now holds them, read back (after an UPDATE whose values
    the database computed)."""
    pks = list(pks)
    if pks:
        _seal(
            model,
            rows(model._base_manager.using(using).filter(pk__in=pks).order_by("pk")),
            action,
            using=using,
        )


def _seal(model: type[Sealed], found: Iterable[tuple[int, int, tuple]], action: str, *, using: str) -> None:
    ring = keyring()
    key = ring.key(ring.current)
    erasure = _erasure.get()
    if erasure is not None and action == CHANGE:
        action = ERASE
    entries = defaultdict(list)
    for pk, tenant_id, values in found:
        entries[tenant_id].append((model.seal_kind, pk, action, digest(model, pk, tenant_id, values, key)))
    for tenant_id, tenant_entries in entries.items():
        if model.seal_grouped and len(tenant_entries) > 1:
            tenant_entries = grouped(tenant_id, tenant_entries, key)
        append(tenant_id, tenant_entries, ring=ring, erasure=erasure, using=using)


# The most rows one group seals: its members are read whole, beside the rows, by verification.
GROUP_MOST = 500


def grouped(tenant_id: int, entries: list[tuple[str, int, str, str]], key: bytes) -> list[tuple]:
    """One ledger entry for every GROUP_MOST rows of one kind written together: its object is the
    lowest row's id, its `members` each row's (id, digest) in id order (in the ledger row's leaf
    and hash), and its digest the HMAC of those members (`group_digest`), by which a group read on
    its own vouches for its rows (`latest_seal`)."""
    kind, _, action, _ = entries[0]
    entries = sorted(entries, key=lambda entry: entry[1])
    found = []
    for start in range(0, len(entries), GROUP_MOST):
        chunk = entries[start : start + GROUP_MOST]
        members = json.dumps([[pk, row_digest] for _, pk, _, row_digest in chunk], separators=(",", ":"))
        found.append((kind, chunk[0][1], action, group_digest(kind, tenant_id, members, key), members))
    return found


def group_digest(kind: str, tenant_id: int, members: str, key: bytes) -> str:
    """HMAC-SHA256 of a group's members, as the ledger holds them (docs/audit.md, "Seals")."""
    payload = {"kind": kind, "tenant_id": tenant_id, "members": members}
    return hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()


def members_of(members: str) -> list[tuple[int, str]]:
    """A group's (row id, digest) pairs, in id order."""
    return [(int(pk), row_digest) for pk, row_digest in json.loads(members)]


# Writes made for an erasure are sealed as `erase`, naming it (compliance/erasure.py).
_erasure: ContextVar[int | None] = ContextVar("sealing_erasure", default=None)


@contextmanager
def erasing(erasure_id: int) -> Iterator[None]:
    token = _erasure.set(erasure_id)
    try:
        yield
    finally:
        _erasure.reset(token)


def seal_deleted(model: type[Sealed], gone: Iterable[tuple[int, int]], *, using: str = "default") -> None:
    ring = keyring()
    key = ring.key(ring.current)
    entries = defaultdict(list)
    for pk, tenant_id in gone:
        entries[tenant_id].append((model.seal_kind, pk, DELETE, deleted_digest(model, pk, tenant_id, key)))
    for tenant_id, tenant_entries in entries.items():
        append(tenant_id, tenant_entries, ring=ring, using=using)


def seal_hash(row, ring: Keyring | None = None) -> str:
    """A ledger row's own HMAC, over its canonical form (docs/audit.md)."""
    key = (ring or keyring()).key(row.key_id)
    if key is None:
        raise ChainBroken(f"seal #{row.seq} is signed with key {row.key_id!r}, which is not in the keyring")
    return hmac.new(key, canonical(seal_payload(row)), hashlib.sha256).hexdigest()


SEAL_FIELDS = (
    "tenant_id", "seq", "kind", "object_id", "action", "digest", "trail_seq", "actor", "erasure",
    "prev_hash", "key_id",
)  # fmt: skip


def seal_payload(row) -> dict:
    """A ledger row's canonical fields, from a row read back (attributes)."""
    return _payload({name: getattr(row, name) for name in (*SEAL_FIELDS, "created_at", "members")})


def _payload(values: dict, names: Sequence[str] = SEAL_FIELDS) -> dict:
    payload = {name: values[name] for name in names}
    payload["created_at"] = values["created_at"].astimezone(UTC).isoformat(timespec="microseconds")
    if values.get("members") is not None:  # a group (`grouped`): a single seal's form is as it was
        payload["members"] = values["members"]
    return payload


# What a ledger row's own keyed digest (`leaf`) covers while it waits for a position: all but the
# three the sequencer adds (audit/sequencer.py).
POSITIONED = ("seq", "prev_hash", "trail_seq")
LEAF_FIELDS = tuple(name for name in SEAL_FIELDS if name not in POSITIONED)


def link_hash(values: dict, key: bytes) -> str:
    """A ledger row's hash once positioned: the HMAC of its canonical form (seal_hash's, from values)."""
    return hmac.new(key, canonical(_payload(values)), hashlib.sha256).hexdigest()


def leaf_payload(values) -> dict:
    """A ledger row's canonical fields without its position (a dict, or a row's attributes)."""
    if not isinstance(values, dict):
        values = {name: getattr(values, name) for name in (*LEAF_FIELDS, "created_at", "members")}
    return _payload(values, LEAF_FIELDS)


def leaf_mac(values, key: bytes) -> str:
    return hmac.new(key, canonical(leaf_payload(values)), hashlib.sha256).hexdigest()


LEDGER_COLUMNS = (*LEAF_FIELDS, "created_at", "leaf", "members")  # a seal waiting for its position
LINKED_COLUMNS = (*SEAL_FIELDS, "created_at", "leaf", "members", "hash")  # one linked as it is written


def _insert(rows: list[dict], columns: tuple[str, ...], *, using: str) -> None:
    """The batch in as few statements as the backend allows, the values as they are (strings,
    integers, one time adapted by the backend): the ORM's model instances and per-value
    preparation cost more than the seals' HMACs. PostgreSQL: one statement of one parameter
    (`json_rows`); elsewhere the backend's own multi-row INSERT."""
    seal_model = apps.get_model("audit", "Seal")
    connection = connections[using]
    ops, quote = connection.ops, connection.ops.quote_name
    fields = [seal_model._meta.get_field(name) for name in columns]
    if connection.vendor == "postgresql":
        _insert_json(
            seal_model,
            fields,
            [[row[name] for name in columns] for row in rows],
            using=using,
            returning=False,
        )
        return
    adapt = {"created_at": ops.adapt_datetimefield_value}
    values = [[adapt.get(name, _same)(row[name]) for name in columns] for row in rows]
    into = f"INSERT INTO {quote(seal_model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
    with connection.cursor() as cursor:
        size = max(1, ops.bulk_batch_size(fields, values))
        for start in range(0, len(values), size):
            batch = values[start : start + size]
            sql = ops.bulk_insert_sql(fields, [["%s"] * len(fields)] * len(batch))
            cursor.execute(into + sql, [value for row in batch for value in row])


def json_rows(connection, fields: Sequence[models.Field]) -> str:
    """PostgreSQL: a SELECT of rows of these fields' columns from one JSON parameter, an array of
    rows of values (`as_json`). The driver dumps one string; arrays a column, or a parameter a
    value, cost it more in Python than the rows' HMACs."""
    return _json_rows(connection.alias, tuple(fields))


@lru_cache(maxsize=256)
def _json_rows(using: str, fields: tuple[models.Field, ...]) -> str:
    """Built once a process for each set of fields: every sealed write's ledger row and each
    sequencer run's positions go through it, and asking each field its column type cost more
    CPU than the INSERT's own work in the driver (0.26 ms a call)."""
    connection = connections[using]
    quote = connection.ops.quote_name
    columns = ", ".join(
        f"(e->>{i})::{field.db_type(connection).split('(')[0]} AS {quote(field.column)}"
        for i, field in enumerate(fields)
    )
    return f"SELECT {columns} FROM json_array_elements(%s::json) AS e"


def as_json(rows: Iterable[Sequence]) -> str:
    """Rows of values as `json_rows` reads them: times as ISO 8601 with their offset."""
    return json.dumps([list(row) for row in rows], default=_iso, allow_nan=False)


def _iso(value):
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not a value json_rows reads")


def _same(value):
    return value


class _Batch:
    """The ledger rows `ledger_batch` holds back for one connection's transaction, each group
    with a mark among the transaction's on-commit callbacks: a savepoint rolled back inside the
    block takes the marks registered under it (Django's `savepoint_rollback`) as it takes the
    rows that were sealed, so their seals are dropped with them."""

    def __init__(self, connection):
        self.connection = connection
        self.held: list[tuple[int, list[dict], partial]] = []

    def hold(self, tenant_id: int, rows: list[dict]) -> None:
        mark = partial(_held)  # one object a group, known by its identity
        self.connection.on_commit(mark)
        self.held.append((tenant_id, rows, mark))

    def kept(self) -> list[tuple[int, list[dict]]]:
        """The rows whose writes the transaction still holds, in the order sealed: a tenant's in
        one INSERT where the backend numbers a multi-row INSERT's rows in their order; elsewhere
        (Oracle's INSERT ... SELECT ... UNION ALL) a group an INSERT, as before the block, so
        that a row sealed twice in it keeps its later seal later in the ledger."""
        alive = {id(func) for _, func, _ in self.connection.run_on_commit}
        groups = [(tenant_id, rows) for tenant_id, rows, mark in self.held if id(mark) in alive]
        if self.connection.vendor not in KEEPS_ROW_ORDER:
            return groups
        out = defaultdict(list)
        for tenant_id, rows in groups:
            out[tenant_id].extend(rows)
        return list(out.items())


# Backends whose multi-row INSERT numbers its rows in the order given (PostgreSQL's from
# json_array_elements, as insert_values already relies on; SQLite's VALUES list).
KEEPS_ROW_ORDER = {"postgresql", "sqlite"}


def _held() -> None:
    """A held group's mark: nothing to do at commit."""


_batch: ContextVar[_Batch | None] = ContextVar("seals_batch", default=None)


@contextmanager
def ledger_batch(using: str = "default") -> Iterator[None]:
    """The ledger rows of every seal appended inside the block, written together as it ends (a
    tenant's in one INSERT on PostgreSQL, in as few as SQLite allows, a group an INSERT on Oracle:
    `_Batch.kept`), where each sealed
    write had an INSERT of its own: the worker's recording of an event's votes seals up to three
    writes, a POST of events two and its receipts one more. (A move keeps its own: its tally
    stripes are the last rows it writes, `_apply`.) Only inside a transaction, which an exception
    out of the block rolls back (it runs in an atomic block of its own, without a savepoint), so
    no write it made can commit without its seal. The seals of rows a savepoint inside it took
    back are dropped with them (`_Batch`). Deferred sequencing only: inline, each seal takes its
    place under the head as it is written. A block inside another is part of it."""
    connection = connections[using]
    if not connection.in_atomic_block:
        raise transaction.TransactionManagementError("ledger_batch() holds seals for a transaction's end")
    if _batch.get() is not None or links_inline():
        yield
        return
    batch = _Batch(connection)
    token = _batch.set(batch)
    try:
        with transaction.atomic(using=using, savepoint=False):
            yield
            # In the block's own atomic: a failed write of the seals dooms their rows with them.
            for tenant_id, rows in batch.kept():
                _write_waiting(tenant_id, rows, using=using)
    finally:
        _batch.reset(token)


def _write_waiting(tenant_id: int, rows: list[dict], *, using: str) -> None:
    """Ledger rows with no position yet, for the sequencer to link once they commit."""
    with naming(tenant_id):
        _insert(rows, LEDGER_COLUMNS, using=using)
    written(tenant_id, using=using)


def append(
    tenant_id: int,
    entries: list[tuple],
    *,
    ring: Keyring,
    erasure: int | None = None,
    using: str = "default",
) -> None:
    """Add (kind, object id, action, digest) entries to the tenant's ledger (a group's with its
    members after them: `grouped`), each with its own keyed digest. Deferred sequencing: with no
    position, and no tenant-wide row locked, so sealed writes of one tenant do not wait for each
    other; the sequencer links them once they commit.
    Inline: linked as they are written, under the tenant's head (integrity/heads.py)."""
    # The ledger is tenant rows: row-level security wants the tenant named, even when the write
    # comes from the admin site or a command that set none.
    key = ring.key(ring.current)
    now, actor = timezone.now(), current_actor()
    rows = []
    for kind, object_id, action, row_digest, *members in entries:
        row = dict(
            tenant_id=tenant_id, kind=kind, object_id=object_id, action=action, digest=row_digest,
            actor=actor, erasure=erasure, created_at=now, key_id=ring.current,
            members=members[0] if members else None,
        )  # fmt: skip
        row["leaf"] = leaf_mac(row, key)
        rows.append(row)
    if not links_inline():
        batch = _batch.get()
        if batch is not None and batch.connection is connections[using]:
            batch.hold(tenant_id, rows)  # written as the block ends (ledger_batch)
            return
        with transaction.atomic(using=using, savepoint=False):
            _write_waiting(tenant_id, rows, using=using)
        return
    with transaction.atomic(using=using, savepoint=False), naming(tenant_id):
        head = lock_head(tenant_id)
        seq, prev = head.seal_seq, head.seal_hash or GENESIS
        for row in rows:
            seq += 1
            row.update(seq=seq, prev_hash=prev, trail_seq=head.seq)
            row["hash"] = prev = link_hash(row, key)
        try:
            with transaction.atomic(using=using, savepoint=False):
                _insert(rows, LINKED_COLUMNS, using=using)
        except IntegrityError as exc:  # the seq after the head is taken: a row written around us
            raise ChainBroken(
                f"the seals' ledger has a row beyond its head (#{head.seal_seq}), written around the "
                "application or left by a rolled-back head: run verify_audit; nothing can change until "
                "an operator resolves it"
            ) from exc
        head.seal_seq, head.seal_hash = seq, prev
        head.save(update_fields=["seal_seq", "seal_hash"])


def baseline(model, tenant_ids: Iterable[int], *, batch: int = 5000) -> None:
    """Seal every row a model holds in these tenants, as `baseline` (a migration that starts
    sealing a table or changes what its seal covers; `model` may be a migration's historical
    model, given `seal_kind`, `seal_tenant` and `seal_fields`)."""
    ring = keyring()
    key = ring.key(ring.current)
    column = _tenant_column(model)
    for tenant_id in tenant_ids:
        found = model._base_manager.filter(**{column: tenant_id}).order_by("pk")
        entries = []
        with tenant_context(tenant_id):
            for pk, row_tenant, values in rows(found):  # a batch at a time: millions of rows fit
                entries.append((model.seal_kind, pk, BASELINE, digest(model, pk, row_tenant, values, key)))
                if len(entries) == batch:
                    append(tenant_id, entries, ring=ring)
                    entries = []
            if entries:
                append(tenant_id, entries, ring=ring)


def unchanged(model: type[Sealed], pk: int, *, obj: Sealed | None = None) -> bool:
    """Whether a sealed row is as its latest seal says: asked before acting on the row's word (a
    token's hash, a member's role), so a row changed around the application, used and put back,
    acts for no one. One indexed read of its latest seal, and one of the row unless `obj` is the
    row as just read."""
    if obj is not None:
        found = (obj.pk, _tenant_of(obj), tuple(getattr(obj, name) for name in model.seal_fields))
    else:
        found = next(rows(model._base_manager.filter(pk=pk)), None)
    if found is None:
        return False
    _, tenant_id, values = found
    latest = latest_seal(tenant_id, model.seal_kind, pk, grouped=model.seal_grouped)
    if latest is None or latest[0] == DELETE:
        return False
    key = keyring().key(latest[2])
    return key is not None and hmac.compare_digest(digest(model, pk, tenant_id, values, key), latest[1])


def naming(tenant_id: int):
    """The tenant named for row-level security, unless it already is (a request's tenant: setting
    it again would cost two round trips)."""
    return nullcontext() if current_tenant() == tenant_id else tenant_context(tenant_id)


def latest_seal(
    tenant_id: int, kind: str, object_id: int, *, grouped: bool = False
) -> tuple[str, str, str] | None:
    """An object's latest seal in a tenant's ledger: (action, digest, key id), or None. Of a kind
    sealed in groups (`grouped`), the newest group naming it is found by reading the kind's newer
    groups in turn: for tests and tools, not for a check made before acting. It trusts that group
    (an edited group vouches for nothing, but a newer one edited to drop the row is seen only by
    verification, which reads every group)."""
    seal_model = apps.get_model("audit", "Seal")
    with naming(tenant_id):
        mine = seal_model.objects.filter(tenant_id=tenant_id, kind=kind)
        single = mine.filter(object_id=object_id)
        if grouped:  # a group's object is its first member's id: its digest is not the member's
            single = single.filter(members__isnull=True)
        # An object's seals are written in turn: its newest is its highest id.
        latest = single.order_by("-pk").values_list("pk", "action", "digest", "key_id").first()
        if grouped:
            since = latest[0] if latest else 0
            newer = mine.filter(object_id__lte=object_id, members__isnull=False, pk__gt=since)
            named = f"[{object_id},"  # read here, not with LIKE: Oracle's LIKE reads 4,000 bytes of a LOB
            found = newer.order_by("-pk").values_list("pk", "action", "digest", "members", "key_id")
            for group in found.iterator(chunk_size=100):
                if named in group[3]:
                    latest = _member(tenant_id, kind, object_id, *group)
                    break
    return None if latest is None else latest[1:]


def _member(tenant_id: int, kind: str, object_id: int, pk, action, sealed, members, key_id) -> tuple | None:
    """A group's seal of one of its rows, as a seal of its own; None when the group was edited
    (it vouches for none of its rows)."""
    key = keyring().key(key_id)
    if key is None or not hmac.compare_digest(group_digest(kind, tenant_id, members, key), sealed):
        return None
    return (pk, action, dict(members_of(members))[object_id], key_id)
