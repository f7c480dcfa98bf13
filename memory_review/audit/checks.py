"""What verify_audit checks, one function per kind of problem (docs/audit.md, "What makes a
trail intact"). Each returns the first problem it finds, named, or None. Every walk streams rows
in chunks and keeps only the row before, so memory stays flat however long the trail grows.

audit/verification.py runs them in order and records the result.
"""

import heapq
import hmac
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from memory_review.integrity import seals
from memory_review.integrity.heads import GENESIS, ChainBroken
from memory_review.integrity.keys import Keyring
from memory_review.tenancy.models import Tenant

from . import chain, sequencer
from .models import AuditChain, Seal, Transition

CHUNK = 5000
GROUP_CHUNK = 100


@dataclass(frozen=True)
class Break:
    tenant: str
    seq: int
    transition_id: int | None
    problem: str
    where: str = "trail"  # trail | seals | rows | checkpoint

    def __str__(self) -> str:
        if not self.seq:  # not a row of a chain: the state it should explain
            return f"tenant {self.tenant}: {self.problem}"
        if self.where == "seals":
            return f"tenant {self.tenant}: seals' ledger broken at #{self.seq}: {self.problem}"
        row = f" (transition id {self.transition_id})" if self.transition_id else ""
        return f"tenant {self.tenant}: chain broken at #{self.seq}{row}: {self.problem}"


@dataclass
class Walked:
    """Where a chain's walk ended, and the hash it found at each row a checkpoint names."""

    last_seq: int = 0
    last_hash: str = GENESIS
    marked: dict[int, str] = field(default_factory=dict)
    most_trail_seq: int = 0  # the seals' ledger only: the furthest transition it saw


class Progress:
    """How far a verification has got: the check it is on and the rows read, told to `report`
    (stage, rows checked) at each stage and every CHUNK rows. The walks below count the
    transitions, the seals in chain order, and the seals again in object order, where each
    sealed row is held to its latest seal: head.seq + 2 x head.seal_seq rows in all."""

    def __init__(self, report: Callable[[str, int], None] | None = None):
        self._report = report or (lambda stage, checked: None)
        self.stage, self.checked = "", 0

    def at(self, stage: str) -> None:
        self.stage = stage
        self._report(stage, self.checked)

    def row(self) -> None:
        self.checked += 1
        if self.checked % CHUNK == 0:
            self._report(self.stage, self.checked)


UNWATCHED = Progress()


# -- the two chains ----------------------------------------------------------------------------


def trail(
    tenant: Tenant,
    head: AuditChain | None,
    ring: Keyring,
    *,
    marks: frozenset[int] = frozenset(),
    progress: Progress = UNWATCHED,
) -> tuple[Break | None, Walked]:
    """The transitions up to the head: no gap, each linked to the one before, each keyed hash
    and each free text's keyed hash as written. A linked row's hash covers every column its own
    digest (`leaf`) covered while it waited, so only waiting rows' leaves are checked (`waiting`)."""
    walked = Walked()
    rows = (
        Transition.objects.for_tenant(tenant)
        .filter(seq__lte=head.seq if head else 0)
        .order_by("seq")
        .iterator(chunk_size=CHUNK)
    )
    for row in rows:
        progress.row()
        if row.seq != walked.last_seq + 1:
            return _gap(tenant, "trail", walked.last_seq + 1, row.seq), walked
        if row.prev_hash != walked.last_hash:
            return Break(tenant.slug, row.seq, row.pk, "prev_hash does not match the row before it"), walked
        try:
            key = chain.signing_key(row, ring)
        except ChainBroken as exc:
            return Break(tenant.slug, row.seq, row.pk, str(exc)), walked
        if not hmac.compare_digest(chain.row_hash(row, ring), row.hash):
            return (
                Break(
                    tenant.slug,
                    row.seq,
                    row.pk,
                    "row was edited or forged (its hash no longer matches its contents)",
                ),
                walked,
            )
        if problem := chain.text_problem(row, key):
            return Break(tenant.slug, row.seq, row.pk, problem), walked
        walked.last_seq, walked.last_hash = row.seq, row.hash
        if row.seq in marks:
            walked.marked[row.seq] = row.hash
    return None, walked


def ledger(
    tenant: Tenant,
    head: AuditChain | None,
    ring: Keyring,
    *,
    marks: frozenset[int] = frozenset(),
    progress: Progress = UNWATCHED,
) -> tuple[Break | None, Walked]:
    """The seals up to the head, as the transitions are walked (their leaves as theirs); and the
    furthest transition any seal saw, which the transitions' chain must still reach."""
    walked = Walked()
    names = (*seals.SEAL_FIELDS, "created_at", "members", "hash", "pk")
    rows = (
        Seal.objects.for_tenant(tenant)
        .filter(seq__lte=head.seal_seq if head else 0)
        .order_by("seq")
        .values_list(*names)
        .iterator(chunk_size=CHUNK)
    )
    for values in rows:
        progress.row()
        found = dict(zip(names, values, strict=True))
        row = _SealRow(found)
        if row.seq != walked.last_seq + 1:
            return _gap(tenant, "seals", walked.last_seq + 1, row.seq), walked
        if row.prev_hash != walked.last_hash:
            return Break(
                tenant.slug, row.seq, None, "prev_hash does not match the seal before it", "seals"
            ), walked
        key = ring.key(row.key_id)
        if key is None:
            problem = f"it is signed with key {row.key_id!r}, which is not in the keyring"
            return Break(tenant.slug, row.seq, None, problem, "seals"), walked
        if not hmac.compare_digest(seals.link_hash(found, key), row.hash):
            problem = "seal was edited or forged (its hash no longer matches its contents)"
            return Break(tenant.slug, row.seq, None, problem, "seals"), walked
        if row.trail_seq < walked.most_trail_seq:
            problem = "it says the transitions' chain was shorter than an earlier seal saw it"
            return Break(tenant.slug, row.seq, None, problem, "seals"), walked
        walked.most_trail_seq = row.trail_seq
        walked.last_seq, walked.last_hash = row.seq, row.hash
        if row.seq in marks:
            walked.marked[row.seq] = row.hash
    return None, walked


class _SealRow:
    """A ledger row read as values (a million model instances would cost seconds)."""

    def __init__(self, values: dict):
        self.__dict__.update(values)


def _gap(tenant: Tenant, where: str, missing: int, found: int) -> Break:
    what = "row" if where == "trail" else "seal"
    return Break(
        tenant.slug, missing, None, f"{what} #{missing} was removed (next {what} is #{found})", where
    )


def waiting(tenant: Tenant, ring: Keyring, *, now: datetime | None = None) -> Break | None:
    """Rows that wait for a position (audit/sequencer.py): each is protected by its own keyed
    digest until it is linked, and none may wait past AUDIT_SEQUENCE_BOUND_SECONDS. A waiting
    row removed leaves what it recorded unexplained: a status without its transition, a sealed
    row without its seal (both checked below)."""
    bound = settings.AUDIT_SEQUENCE_BOUND_SECONDS
    oldest = (now or timezone.now()) - timedelta(seconds=bound)

    def late(what: str, at: datetime) -> str:
        return (
            f"{what} has waited since {at:%Y-%m-%d %H:%M:%S} UTC for its position (the bound is {bound} s): "
            "the sequencer is not running, or stopped at a row it refused"
        )

    for row in sequencer.waiting_transitions(tenant.pk).order_by("pk").iterator(chunk_size=CHUNK):
        what = f"unsequenced transition id {row.pk}"
        try:
            key = chain.signing_key(row, ring)
        except ChainBroken as exc:
            return Break(tenant.slug, 0, row.pk, str(exc))
        if row.leaf is None or not hmac.compare_digest(chain.leaf_mac(row, ring), row.leaf):
            return Break(
                tenant.slug, 0, row.pk, f"{what} was edited or forged while it waited for a position"
            )
        if problem := chain.text_problem(row, key):
            return Break(tenant.slug, 0, row.pk, f"{what}: {problem}")
        if row.created_at < oldest:
            return Break(tenant.slug, 0, row.pk, late(what, row.created_at))
    names = (*seals.LEAF_FIELDS, "created_at", "leaf", "members", "pk")
    found = sequencer.waiting_seals(tenant.pk).order_by("pk").values_list(*names).iterator(chunk_size=CHUNK)
    for values in found:
        row = dict(zip(names, values, strict=True))
        what = f"unsequenced seal id {row['pk']} ({row['kind']} {row['object_id']})"
        key = ring.key(row["key_id"])
        if (
            key is None
            or row["leaf"] is None
            or not hmac.compare_digest(seals.leaf_mac(row, key), row["leaf"])
        ):
            return Break(
                tenant.slug, 0, None, f"{what} was edited or forged while it waited for a position", "seals"
            )
        if row["created_at"] < oldest:
            return Break(tenant.slug, 0, None, late(what, row["created_at"]), "seals")
    for feed in sequencer.FEEDS:
        stuck = feed.objects.filter(tenant_id=tenant.pk, seq__isnull=True, created_at__lt=oldest).order_by(
            "pk"
        )
        if (row := stuck.first()) is not None:
            return _named(tenant, late(f"{feed._meta.verbose_name} {row.pk}", row.created_at))
    return None


def heads(tenant: Tenant, head: AuditChain | None, trail_end: Walked, seals_end: Walked) -> Break | None:
    """Each head names its chain's last row, and no row lies beyond it."""
    if head is None:
        if Transition.objects.for_tenant(tenant).exists():
            return Break(tenant.slug, 1, None, "the chain has rows but no head")
        if Seal.objects.for_tenant(tenant).exists():
            return Break(tenant.slug, 1, None, "the seals' ledger has rows but no head", "seals")
        return None
    if head.seq != trail_end.last_seq or head.head_hash != trail_end.last_hash:
        problem = (
            f"the chain ends at #{trail_end.last_seq} but its head says #{head.seq}: "
            "rows were removed from the end"
        )
        return Break(tenant.slug, head.seq, None, problem)
    if head.seal_seq != seals_end.last_seq or head.seal_hash != seals_end.last_hash:
        problem = (
            f"the ledger ends at #{seals_end.last_seq} but its head says #{head.seal_seq}: "
            "seals were removed from the end"
        )
        return Break(tenant.slug, head.seal_seq, None, problem, "seals")
    return _beyond_heads(tenant)


def binding(tenant: Tenant, trail_end: Walked, seals_end: Walked) -> Break | None:
    """The transitions' chain still reaches every row a seal saw: the trail cut with its head
    (every status reset with it) is caught here even with no checkpoint."""
    if seals_end.most_trail_seq > trail_end.last_seq:
        return Break(
            tenant.slug,
            0,
            None,
            f"a seal was written when the transitions' chain reached #{seals_end.most_trail_seq}, "
            f"but the chain now ends at #{trail_end.last_seq}: transitions were removed and the head "
            "rolled back",
        )
    return None


def _beyond_heads(tenant: Tenant) -> Break | None:
    """Rows past either head (read afresh, so a write committed meanwhile is not one)."""
    head = AuditChain.objects.for_tenant(tenant).first()
    stray = (
        Transition.objects.for_tenant(tenant).filter(seq__gt=head.seq if head else 0).order_by("seq").first()
    )
    if stray is not None:
        return Break(
            tenant.slug,
            stray.seq,
            stray.pk,
            f"row lies beyond the chain's head (#{head.seq if head else 0}): appended around the "
            "application, or the head was rolled back",
        )
    stray = (
        Seal.objects.for_tenant(tenant).filter(seq__gt=head.seal_seq if head else 0).order_by("seq").first()
    )
    if stray is not None:
        problem = (
            f"seal lies beyond the ledger's head (#{head.seal_seq if head else 0}): appended around the "
            "application, or the head was rolled back"
        )
        return Break(tenant.slug, stray.seq, None, problem, "seals")
    return None


def against_checkpoints(tenant: Tenant, found, trail_end: Walked, seals_end: Walked) -> Break | None:
    """Signed checkpoints kept outside the database catch what the chains alone cannot: a tail
    cut together with its head, a head rolled back to an earlier row, or (by whoever holds the
    key) history rewritten and signed again. Every line is held to it, not only the newest."""
    if found is None:
        return None
    newest = found.newest
    for where, seq, end in (("trail", newest.seq, trail_end), ("seals", newest.seal_seq, seals_end)):
        if seq is not None and seq > end.last_seq:
            what = "chain" if where == "trail" else "seals' ledger"
            problem = (
                f"the checkpoint of {newest.at} recorded #{seq}, but the {what} now ends at "
                f"#{end.last_seq}: rows were removed or the head was rolled back"
            )
            return Break(tenant.slug, seq, None, problem, where)
    for checkpoint in found.checkpoints:
        for where, seq, recorded, end in (
            ("trail", checkpoint.seq, checkpoint.hash, trail_end),
            ("seals", checkpoint.seal_seq, checkpoint.seal_hash, seals_end),
        ):
            if seq and end.marked.get(seq) != recorded:  # a line from before seals has no seal_seq
                what = "chain" if where == "trail" else "seals' ledger"
                problem = (
                    f"#{seq} is not the row the checkpoint of {checkpoint.at} recorded: the {what} was "
                    "rewritten"
                )
                return Break(tenant.slug, seq, None, problem, where)
    return None


# -- every sealed row against its latest seal ----------------------------------------------------


def sealed_rows(tenant: Tenant, ring: Keyring, *, progress: Progress = UNWATCHED) -> Break | None:
    """Each sealed table, row by row beside its seals (both in id order): a row with no seal was
    inserted around the application, a seal with no row marks a row deleted around it, and a
    row whose digest differs from its latest seal was changed around it (or put back as it was)."""
    for model in seals.sealed_models():
        if problem := _sealed_table(tenant, model, ring, progress):
            return problem
    return erased_transitions(tenant, ring, progress)


def _sealed_table(tenant: Tenant, model, ring: Keyring, progress: Progress) -> Break | None:
    name = model._meta.verbose_name
    column = "pk" if model.seal_tenant == "pk" else model.seal_tenant
    table = model._base_manager.filter(**{column: tenant.pk}).order_by("pk")
    rows = seals.rows(table, chunk_size=CHUNK)
    # A group's members are up to 36 kB of text: a grouped kind's seals are read fewer at a time.
    chunk = GROUP_CHUNK if model.seal_grouped else CHUNK
    latest = _latest_seals(tenant, model.seal_kind, progress, chunk=chunk)
    row, seal = next(rows, None), next(latest, None)
    while row is not None or seal is not None:
        if seal is None or (row is not None and row[0] < seal.object_id):
            return _named(tenant, f"{name} {row[0]} has no seal: it was inserted around the application")
        if row is None or seal.object_id < row[0]:
            if seal.action != seals.DELETE:
                created_at, _ = _written(seal)
                return _named(
                    tenant,
                    f"{name} {seal.object_id} was deleted around the application (sealed at #{seal.seq}, "
                    f"{created_at:%Y-%m-%d %H:%M} UTC)",
                )
            seal = next(latest, None)
            continue
        pk, tenant_id, values = row
        if seal.action == seals.DELETE:
            return _named(
                tenant,
                f"{name} {pk} was deleted (seal #{seal.seq}) but is back: reinserted around the application",
            )
        key = ring.key(seal.key_id)
        if key is None:
            return _named(
                tenant, f"{name} {pk} is sealed with key {seal.key_id!r}, which is not in the keyring"
            )
        if not hmac.compare_digest(seals.digest(model, pk, tenant_id, values, key), seal.digest):
            created_at, actor = _written(seal)
            return _named(
                tenant,
                f"{name} {pk} was changed around the application: it no longer matches its seal "
                f"(#{seal.seq}, {created_at:%Y-%m-%d %H:%M} UTC, by {actor})",
            )
        row, seal = next(rows, None), next(latest, None)
    return None


def erased_transitions(tenant: Tenant, ring: Keyring, progress: Progress = UNWATCHED) -> Break | None:
    """A transition's text is blanked only by an erasure, which seals the blanking: a blank row
    with no such seal was blanked around the application, and a sealed blanking whose row holds
    text again had its text put back."""
    rows = (
        Transition.objects.for_tenant(tenant)
        .filter(erased_by__isnull=False)
        .order_by("pk")
        .values_list("pk", "seq", "erased_by")
        .iterator(chunk_size=CHUNK)
    )
    latest = _latest_seals(tenant, chain.SEAL_KIND, progress)
    row, seal = next(rows, None), next(latest, None)
    while row is not None or seal is not None:
        if seal is None or (row is not None and row[0] < seal.object_id):
            return Break(
                tenant.slug,
                row[1],
                row[0],
                "its text was blanked around the application (no erasure sealed it)",
            )
        if row is None or seal.object_id < row[0]:
            return _named(
                tenant,
                f"transition id {seal.object_id}: erasure {seal.erasure} blanked its text, "
                "but the text is back",
            )
        key = ring.key(seal.key_id)
        if key is None or not hmac.compare_digest(
            chain.erased_digest(row[0], tenant.pk, row[2], key), seal.digest
        ):
            return Break(
                tenant.slug, row[1], row[0], f"its blanking does not match what erasure {seal.erasure} sealed"
            )
        row, seal = next(rows, None), next(latest, None)
    return None


def _latest_seals(
    tenant: Tenant, kind: str, progress: Progress = UNWATCHED, *, chunk: int = CHUNK
) -> Iterator[_SealRow]:
    """Each object's latest seal of this kind, in object order: what comparing needs (when and by
    whom it was written are read for a problem's words alone, `_written`: a time a seal would
    cost its driver as much as its digest). A group's members each count as a seal of their own,
    at the group's place in the ledger."""
    names = ("pk", "object_id", "seq", "action", "digest", "key_id", "erasure", "members")
    found = (
        Seal.objects.for_tenant(tenant)
        .filter(kind=kind)
        .order_by("object_id", "pk")  # an object's seals are written in turn: its newest is its last
        .values_list(*names)
        .iterator(chunk_size=chunk)
    )
    last = None
    for current in _each_object(found, names, progress):
        if last is not None and current.object_id != last.object_id:
            yield last
        last = current
    if last is not None:
        yield last


def _each_object(found, names, progress: Progress) -> Iterator[_SealRow]:
    """The seals in (object, seal id) order, a group's members spread among the rest. A group's
    object is its first member's; the others wait in a heap until the read passes them: the
    groups open at once are those written at once, so the heap stays small. A group's members are
    as the application wrote them: they are in its ledger row's hash (or, waiting, its leaf),
    which checks 2a and 3 held before this one runs."""
    pending: list[tuple[int, int, int, _SealRow]] = []
    for values in found:
        progress.row()
        row = _SealRow(dict(zip(names, values, strict=True)))
        while pending and pending[0][:2] < (row.object_id, row.pk):
            yield heapq.heappop(pending)[-1]
        if row.members is None:
            yield row
            continue
        for n, (object_id, digest) in enumerate(seals.members_of(row.members)):
            member = _SealRow({**row.__dict__, "object_id": object_id, "digest": digest, "members": None})
            heapq.heappush(pending, (object_id, row.pk, n, member))
    while pending:
        yield heapq.heappop(pending)[-1]


def _written(seal: _SealRow) -> tuple[datetime, str]:
    """When a seal was written, and by whom."""
    return Seal.objects.filter(pk=seal.pk).values_list("created_at", "actor").get()


def _named(tenant: Tenant, problem: str) -> Break:
    return Break(tenant.slug, 0, None, problem, "rows")


# -- statuses, and what other layers add -------------------------------------------------------


def statuses(tenant: Tenant) -> Break | None:
    """Replay: every memory's and candidate's status and row version are those its last
    transition produced (each starts at its model's default status, version 1), so a status
    written straight into the table is caught."""
    for relation in ("memory", "candidate"):
        model = Transition._meta.get_field(relation).related_model
        initial = model._meta.get_field("status").default
        # A move not yet sequenced is its memory's newest (moves of one memory commit in turn).
        latest = Transition.objects.filter(**{relation: OuterRef("pk")}).order_by(
            F("seq").desc(nulls_first=True), "-pk"
        )
        # Spelled out for SQL's NULLs: "last_to = status" is unknown, not false, with no transition.
        unexplained = Q(last_to__isnull=False) & (~Q(last_to=F("status")) | ~Q(last_version=F("row_version")))
        touched = Q(last_to__isnull=True) & ~Q(status=initial, row_version=1)
        odd = (
            model.objects.for_tenant(tenant)
            .annotate(
                last_to=Subquery(latest.values("to_status")[:1]),
                last_version=Subquery(latest.values("row_version")[:1]),
            )
            .filter(unexplained | touched)
            .order_by("pk")
            .values("pk", "status", "row_version", "last_to", "last_version")
            .first()
        )
        if odd is not None:
            said = (
                f"{odd['last_to']} at version {odd['last_version']}"
                if odd["last_to"]
                else f"{initial} (no transition)"
            )
            return _named(
                tenant,
                f"{relation} {odd['pk']} is {odd['status']} at version {odd['row_version']}, but its audit "
                f"trail says {said}: its status was changed without a transition",
            )
    return None


# Checks other layers register (compliance: the two-person rule held for every erasure and
# forget), run after the audit trail's own: each takes a tenant and returns a problem or None.
RULES: list[Callable[[Tenant], str | None]] = []


def rules(tenant: Tenant) -> Break | None:
    for rule in RULES:
        if problem := rule(tenant):
            return _named(tenant, problem)
    return None
