"""The one function that changes a status (DESIGN §3). Nothing else writes `status`.

`transition()` locks the row, checks that the move is allowed for this kind of actor and that
the row version is the one the actor saw, updates the row and appends the audit Transition, all
in one transaction. A refused move raises a LifecycleError and writes nothing.

Which moves each kind of actor may make, and what a move writes besides, belong to the package
that owns the rows: memories/moves.py for memories, assessments/moves.py for proposed memories.
This module imports neither (it sits below both, with the audit it writes to).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory_review.audit import chain
from memory_review.audit.models import Transition
from memory_review.ops import metrics
from memory_review.textlimits import fit

ACTOR_KINDS = ("policy", "user", "system")


class LifecycleError(Exception):
    """A move the lifecycle refuses. Nothing was written."""


class IllegalTransition(LifecycleError):
    pass


class StaleVersion(LifecycleError):
    """Someone else changed the row since the actor saw it: the race's loser gets this."""


@dataclass(frozen=True)
class Actor:
    """`policy:<version>`, `user:<id>` or `system:<job>`."""

    kind: str
    name: str

    def __post_init__(self):
        if self.kind not in ACTOR_KINDS:
            raise ValueError(f"unknown actor kind {self.kind!r}; expected one of {ACTOR_KINDS}")
        if not self.name:
            raise ValueError("an actor needs a name")

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @classmethod
    def user(cls, user) -> "Actor":
        return cls("user", str(user.pk))

    @classmethod
    def policy(cls, label: str) -> "Actor":
        return cls("policy", label)

    @classmethod
    def system(cls, job: str) -> "Actor":
        return cls("system", job)


# (actor kind, action) -> (statuses it may start from, status it ends in).
Moves = dict[tuple[str, str], tuple[frozenset[str], str]]


def _nothing_more(row, **move) -> list[str]:
    return []


def _nothing_after(row, audit: Transition, from_status: str) -> None:
    return None


@dataclass(frozen=True)
class Kind:
    """A kind of row the lifecycle moves, as the package that owns the rows describes it
    (memories/moves.py, assessments/moves.py). The lifecycle knows no row's model: what a move may
    do and what it writes besides the status, the audit row and the version are the owner's.

    `prepare(row, action=, target=, now=, actor=, verdict=, flagged_for=)` runs under the row's
    lock once the move is allowed: it may refuse (a LifecycleError) or set more of the row's fields,
    and returns their names. `after(row, audit, from_status)` runs in the same transaction once the
    move and its audit row are written."""

    noun: str  # what a refusal calls it: "memory", "proposed memory"
    moves: Moves
    audit_field: str  # the audit Transition's foreign key to it
    hash_field: str  # the field whose value the Transition records as its content
    prepare: Callable[..., list[str]] = _nothing_more
    after: Callable[[Any, Transition, str], None] = _nothing_after


_KINDS: dict[type, Kind] = {}


def register(model: type, kind: Kind) -> None:
    """Give `model`'s rows a lifecycle; its app's ready() does, so every process has them. A
    model has one: a second, different one is refused, not put in the first's place."""
    if _KINDS.setdefault(model, kind) is not kind:
        raise ValueError(f"{model.__name__} already has a lifecycle")


def kind_of(obj) -> Kind:
    """The lifecycle of `obj`'s model, or of the model it derives from (a proxy's)."""
    for cls in type(obj).__mro__:
        if cls in _KINDS:
            return _KINDS[cls]
    raise TypeError(f"{type(obj).__name__} has no lifecycle")


def permits(obj, actor_kind: str, action: str) -> bool:
    """Whether `action` by this kind of actor is allowed from `obj`'s current status."""
    move = kind_of(obj).moves.get((actor_kind, action))
    return move is not None and obj.status in move[0]


def transition(
    *,
    obj,
    action: str,
    actor: Actor,
    reason: str,
    seen_version: int,
    verdict=None,
    request_id: str | None = None,
    flagged_for: str | None = None,
    savepoint: bool = True,
) -> Transition:
    """Move `obj` (a memory or a proposed memory) by `action` on behalf of `actor`. Updates `obj`
    in place on success. `verdict`: the one the move acts on, if any. `flagged_for`: what sent it
    back to review, where the caller knows better than the move (an undo that reopens a memory
    held before it was trusted: `held` again). `savepoint=False`: for a caller whose whole
    transaction is this move, and goes if the move is refused (two round trips fewer); by
    default a refused move undoes only itself, and the caller's transaction goes on."""
    kind = kind_of(obj)
    if (actor.kind, action) not in kind.moves:
        raise IllegalTransition(f"{actor.kind} actors cannot {words(action)} a {kind.noun}")
    sources, target = kind.moves[(actor.kind, action)]
    if not reason or not reason.strip():
        raise LifecycleError("a transition needs a reason")

    with transaction.atomic(savepoint=savepoint):
        row = type(obj).objects.select_for_update().get(pk=obj.pk)
        if row.row_version != seen_version:
            since = row.row_version - seen_version
            raise StaleVersion(
                f"{named(row)} changed since you saw it ({since} change{'s' if since != 1 else ''} "
                f"since); its status is now {_status(row)}"
            )
        if row.status not in sources:
            raise IllegalTransition(f"cannot {words(action)} {named(row)}: its status is {_status(row)}")
        now = timezone.now()
        more = kind.prepare(
            row, action=action, target=target, now=now, actor=actor, verdict=verdict, flagged_for=flagged_for
        )
        changed = ["status", "row_version", "updated_at", *more]
        from_status = row.status
        row.status = target
        row.row_version += 1
        try:
            row.save(update_fields=changed)
        except IntegrityError as exc:  # a concurrent write won the subject first
            raise subject_taken(row, f"{words(action)} {named(row)}") from exc
        try:
            audit = chain.append(
                Transition(
                    tenant_id=row.tenant_id,
                    **{kind.audit_field: row},
                    from_status=from_status,
                    to_status=target,
                    action=action,
                    actor=str(actor),
                    reason=fit(reason.strip(), 1000),
                    verdict=verdict,
                    row_version=row.row_version,
                    request_id=request_id or None,  # '' reads back as NULL on Oracle: hash the same
                    content_hash=getattr(row, kind.hash_field),
                    created_at=now,
                )
            )
        except chain.ChainBroken as exc:
            raise LifecycleError(f"nothing was changed: {exc}") from exc
        kind.after(row, audit, from_status)
    transaction.on_commit(lambda: metrics.TRANSITIONS.labels(actor.kind, action).inc())
    for field in changed:
        setattr(obj, field, getattr(row, field))
    return audit


# Refusals are read by people (the screens show them as they are): names and words, not ids and
# codes (issue 15).
def named(obj) -> str:
    return f"“{obj.subject}”"


def words(code: str) -> str:
    return code.replace("_", " ")


def _status(obj) -> str:
    return obj.get_status_display().lower()


def subject_taken(memory, doing: str) -> LifecycleError:
    """The error for a second live memory on one subject and scope (memory_live_subject_uq)."""
    return LifecycleError(
        f"cannot {doing}: another live memory already holds subject "
        f"{memory.subject!r} in this scope ({memory.scope_label})"
    )
