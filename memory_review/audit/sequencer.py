"""The sequencer (docs/audit.md, "Sequencing"): it gives a tenant's committed transitions, seals
and feed changes their positions, and links them into the tenant's chains, a batch at a time.

Writers append those rows with no position and a keyed digest of their own (`leaf`), and lock
nothing tenant-wide (integrity/heads.py, `written`). One sequencer runs a tenant at a time: it holds
the tenant's AuditChain row while it works. In one transaction it reads the rows that have
committed without a position, oldest first, checks each one's own digest (a row changed while it
waited is never linked: the tenant's sequencing stops, and verify_audit names the row), and
gives them the next positions:

* feed changes (the tables FEEDS names: memories' change feed) the next `seq`s of the feed, each
  position sealed as it is given (so the seals it writes are linked in the same run);
* transitions the next positions of the transitions' chain, each linked to the one before by
  its keyed hash, exactly as before positions were deferred (tools/verify_export.py is unchanged);
* seals the next positions of the seals' ledger, each recording how far the transitions' chain
  then reached.

Positions are given only to committed rows, and only by this one serial writer, so a reader that
has seen position N has seen every position before it: a later run gives higher positions, and
a run's positions become visible together when it commits. That is the feed's promise, kept
without any writer waiting for another.
"""

import hmac
import logging
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import connections, transaction
from django.db.models import Max, Min, QuerySet
from django.dispatch import Signal

from memory_review.integrity import seals
from memory_review.integrity.heads import (
    GENESIS,
    ChainBroken,
    clear_flag,
    lock_head,
    nudge,
    nudge_again,
    refuse_beyond,
    sequencing,
)
from memory_review.integrity.keys import Keyring, keyring

from . import chain
from .models import AuditChain, Seal, Transition

logger = logging.getLogger(__name__)
BATCH = 1000  # rows of each kind a transaction links; a longer backlog takes more transactions

# Tables whose rows take the tenant's next feed position (`seq`, unique a tenant, NULL until
# given): memories registers its change feed here (memories/apps.py). Each must be sealed.
FEEDS: list[type] = []
# Sent when a run that gave feed positions commits (tenant_id=, given=): the webhooks fan out.
positioned = Signal()


@dataclass
class Run:
    fed: int = 0
    linked: int = 0
    sealed: int = 0

    @property
    def rows(self) -> int:
        return self.fed + self.linked + self.sealed

    def add(self, other: "Run") -> None:
        self.fed, self.linked, self.sealed = (
            self.fed + other.fed, self.linked + other.linked, self.sealed + other.sealed
        )  # fmt: skip


@contextmanager
def _sequencing():
    token = sequencing.set(True)
    try:
        yield
    finally:
        sequencing.reset(token)


def run(tenant_id: int, *, wait: bool = False, queued: bool = False, held: int = 0) -> Run:
    """The task's work (`queued`: the run a nudge queued), and the sweep's: link what has
    committed, once. The flag is cleared once the head is held, before anything is read, so a row
    that commits later queues the next run, AUDIT_SEQUENCE_DELAY_MS on (integrity/heads.py,
    `nudge`): a tenant's runs come about one a delay, each linking what many commits wrote,
    rather than back to back, a few rows each. A queued run that finds another holding the head
    keeps its flag and comes back a delay later (later still once `held` runs in a row have found
    it held: heads.backoff); the sweep's asks for a run as a commit would.
    So no worker process waits on the head, and every row committed is linked by a run that
    starts after its commit. `wait`: wait for the head instead (a run in the writer's own
    process, Celery's eager mode, where nothing could come back)."""
    done = sequence(tenant_id, wait=wait, before=clear_flag)
    if done is not None:
        return done
    if queued:
        nudge_again(tenant_id, held=held + 1)
    else:
        nudge(tenant_id)
    return Run()


def sequence(
    tenant_id: int, *, using: str = "default", batch: int = BATCH, wait: bool = True, before=None
) -> Run | None:
    """Give the tenant's waiting rows their positions, a batch of each kind a transaction. With
    `wait=False`, None when another run holds the tenant's head (and, after a first batch, what
    was linked before another took it: that one reads after this commits, and links the rest).
    `before(tenant_id)` runs once the head is held, before anything is read (the task clears its
    flag there)."""
    total = Run()
    while True:
        done = _one_batch(tenant_id, using=using, batch=batch, wait=wait, before=before)
        if done is None:
            return None if not total.rows else total
        before = None
        total.add(done)
        if max(done.fed, done.linked, done.sealed) < batch:
            return total


def _one_batch(tenant_id: int, *, using: str, batch: int, wait: bool, before) -> Run | None:
    done = Run()
    with transaction.atomic(using=using, savepoint=False), seals.naming(tenant_id), _sequencing():
        head = lock_head(tenant_id) if wait else try_head(tenant_id, using=using)
        if head is None:
            return None
        if before is not None:
            before(tenant_id)
        ring = keyring()
        for feed in FEEDS:
            done.fed += _feed(feed, tenant_id, using=using, batch=batch)
        done.linked = _link_transitions(head, ring, using=using, batch=batch)
        # The seals' batch is larger: each feed position given above was sealed just now.
        done.sealed = _link_seals(head, ring, using=using, batch=batch * (1 + len(FEEDS)) * 2)
        if done.linked or done.sealed:
            head.save(update_fields=["seq", "head_hash", "seal_seq", "seal_hash"])
        if done.fed:
            given = done.fed
            transaction.on_commit(lambda: positioned.send(sender=Run, tenant_id=tenant_id, given=given))
    return done


def try_head(tenant_id: int, *, using: str = "default"):
    """The tenant's AuditChain row locked for this transaction, or None when another holds it."""
    found = list(AuditChain.objects.using(using).select_for_update(skip_locked=True).filter(pk=tenant_id))
    if found:
        return found[0]
    if not AuditChain.objects.using(using).filter(pk=tenant_id).exists():
        return lock_head(tenant_id)  # the tenant's first run makes its head (and waits, once)
    return None


def _feed(model, tenant_id: int, *, using: str, batch: int) -> int:
    manager = model.objects.db_manager(using)
    waiting = list(manager.filter(tenant_id=tenant_id, seq__isnull=True).order_by("pk")[:batch])
    if waiting:
        last = manager.filter(tenant_id=tenant_id).aggregate(last=Max("seq"))["last"] or 0
        for position, row in enumerate(waiting, start=last + 1):
            row.seq = position
        _write_positions(model, ("seq",), [(row.pk, row.seq) for row in waiting], using=using)
        # Sealed, the position with the rest: the rows were read whole just now, under the head.
        seals.seal_objects(model, waiting, seals.CHANGE, using=using)
    return len(waiting)


def waiting_transitions(tenant_id: int):
    return Transition.objects.filter(tenant_id=tenant_id, seq__isnull=True)


def waiting_seals(tenant_id: int):
    return Seal.objects.filter(tenant_id=tenant_id, seq__isnull=True)


def _link_transitions(head, ring: Keyring, *, using: str, batch: int) -> int:
    rows = list(waiting_transitions(head.tenant_id).using(using).order_by("pk")[:batch])
    if rows:
        refuse_beyond(
            Transition,
            head.tenant_id,
            head.seq,
            what="the audit chain has row",
            named="transition id",
            using=using,
        )
    for row in rows:
        key = ring.key(row.key_id) if row.key_id else None
        # Its own digest covers its text's keyed hashes; the text itself must still match them.
        intact = key is not None and chain.text_problem(row, key) is None
        _refuse_changed(row.leaf, chain.leaf_mac(row, ring) if intact else None, f"transition id {row.pk}")
        row.seq, row.prev_hash = head.seq + 1, head.head_hash or GENESIS
        row.hash = chain.row_hash(row, ring)
        head.seq, head.head_hash = row.seq, row.hash
    if rows:
        positions = [(row.pk, row.seq, row.prev_hash, row.hash) for row in rows]
        _write_positions(Transition, ("seq", "prev_hash", "hash"), positions, using=using)
    return len(rows)


SEAL_READ = (*seals.LEAF_FIELDS, "created_at", "leaf", "members", "pk")


def _link_seals(head, ring: Keyring, *, using: str, batch: int) -> int:
    found = list(waiting_seals(head.tenant_id).using(using).order_by("pk").values_list(*SEAL_READ)[:batch])
    rows = []
    if found:
        refuse_beyond(
            Seal,
            head.tenant_id,
            head.seal_seq,
            what="the seals' ledger has seal",
            named="seal id",
            using=using,
        )
    for values in found:
        row = dict(zip(SEAL_READ, values, strict=True))
        key = ring.key(row["key_id"])
        expected = seals.leaf_mac(row, key) if key is not None else None
        _refuse_changed(row["leaf"], expected, f"seal id {row['pk']}")
        row["seq"], row["prev_hash"], row["trail_seq"] = (
            head.seal_seq + 1,
            head.seal_hash or GENESIS,
            head.seq,
        )
        row["hash"] = seals.link_hash(row, key)
        head.seal_seq, head.seal_hash = row["seq"], row["hash"]
        rows.append((row["pk"], row["seq"], row["prev_hash"], row["trail_seq"], row["hash"]))
    if rows:
        _write_positions(Seal, ("seq", "prev_hash", "trail_seq", "hash"), rows, using=using)
    return len(rows)


def _write_positions(model, names: tuple[str, ...], rows: list[tuple], *, using: str) -> None:
    """(id, *values of `names`) for each row, in as few statements as the backend allows.
    PostgreSQL: one UPDATE ... FROM the rows as one parameter (seals.json_rows; Django's bulk_update
    builds a CASE per column per row, which cost more than the HMACs). Elsewhere bulk_update (on Oracle a
    MERGE would do the same; not measured here)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        objs = [model(pk=pk, **dict(zip(names, values, strict=True))) for pk, *values in rows]
        # Not sealed here: a sealed row's caller seals it, with the rest of its values.
        QuerySet(model, using=using).bulk_update(objs, list(names))
        return
    quote = connection.ops.quote_name
    fields = [model._meta.pk, *(model._meta.get_field(name) for name in names)]
    sets = ", ".join(f"{quote(f.column)} = v.{quote(f.column)}" for f in fields[1:])
    pk = quote(fields[0].column)
    sql = (
        f"UPDATE {quote(model._meta.db_table)} AS t SET {sets} "
        f"FROM ({seals.json_rows(connection, fields)}) AS v WHERE t.{pk} = v.{pk}"
    )
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            cursor.execute(sql, [seals.as_json(rows[start : start + BATCH])])


def _refuse_changed(stored: str | None, expected: str | None, what: str) -> None:
    if expected is None or stored is None or not hmac.compare_digest(stored, expected):
        raise ChainBroken(
            f"{what} changed while it waited for a position (its own keyed digests no longer match, "
            "or it names no key): nothing more is linked until an operator looks (run verify_audit)"
        )


def oldest_waiting(tenant_id: int) -> datetime | None:
    """When the tenant's longest-waiting row was written, or None when nothing waits (an index
    probe a kind of row): /metrics reports it, so a stopped sequencer is seen within seconds,
    long before verification's bound (AUDIT_SEQUENCE_BOUND_SECONDS) names the row."""
    kinds = (waiting_transitions(tenant_id), waiting_seals(tenant_id))
    kinds += tuple(feed.objects.filter(tenant_id=tenant_id, seq__isnull=True) for feed in FEEDS)
    found = (rows.aggregate(at=Min("created_at"))["at"] for rows in kinds)
    return min((at for at in found if at is not None), default=None)


def waiting(tenant_id: int) -> bool:
    """Whether any of the tenant's rows waits for a position (three index probes)."""
    return (
        waiting_transitions(tenant_id).exists()
        or waiting_seals(tenant_id).exists()
        or any(f.objects.filter(tenant_id=tenant_id, seq__isnull=True).exists() for f in FEEDS)
    )


def register_feed(model) -> Callable:
    if model not in FEEDS:
        FEEDS.append(model)
    return model
