"""The review flow: one queue item at a time, in the queue's order, decided with one key
(LangSmith's and Langfuse's annotation queues). Arriving at an item claims it, skipping releases
it, a decision moves on to the next, and `u` takes the last decision back within
REVIEW_UNDO_SECONDS as a compensating move of its own on the audit trail, unless someone acted on
the memory since. The screens pass the filtered queue in; every move is a decision of
workflow/decisions.py, so claims, row versions and the audit trail hold as they do elsewhere.

A decision names what was on screen: the flow's form carries `shown`, a token this server
signed when it rendered the item (its id and row version, the reviewer, the time in ms). A
decision without one, for another item, reviewer or version, or sooner than READ_FLOOR_MS after
the item was rendered, is refused and writes nothing. static/js/keys.js keeps the same floor
from the moment the item appears, so a key it lets through always passes here: the server
renders before the browser shows, and hears the key after it is pressed."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet
from django.utils import timezone

from memory_review.assessments.models import Verdict
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, LifecycleError, transition
from memory_review.memories.models import HELD, Memory, MemoryStatus
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.names import actor_names

from . import claims
from .decisions import Outcome, memory_decide
from .models import Claim

# What one key decides in the flow, and the move it makes.
KEYS = {"a": "approve", "f": "freeze", "x": "kill"}
DECIDED = ("approve", "freeze", "contradict", "supersede")  # what counts as a decision made here
REPLACES_AT = 0.6  # a kill whose vote says the event replaces the memory is a supersede
# What the reviewer is told (and a screen reader says) after a decision.
DONE = {
    "approve": "Approved “{}”.",
    "freeze": "Froze “{}”.",
    "contradict": "Marked “{}” contradicted.",
    "supersede": "Marked “{}” superseded.",
}
# The least time an item is on screen before a decision on it counts as a person's: 200 ms, the
# quickest simple visual reaction (a key pressed the moment anything appears, with nothing to
# read or choose; 190-250 ms on average, rarely under 150 ms). A key sooner than that was pressed
# before the item could be seen: a held key's repeat, or the second of a double press (which
# lands on an item shown for the gap less the time it took to come, so every double press up to
# 200 ms apart, the 50-200 ms included, is caught whatever the server's speed). It is no
# higher because the deliberate reviewer presses one key every 400 ms and the next item
# takes up to ~180 ms (p95) to arrive: 400 - 180 leaves 220 ms on screen, above the floor.
READ_FLOOR_MS = 200
SHOWN_SALT = "memory-review.flow-shown"


class UndoRefused(LifecycleError):
    pass


class NotShown(LifecycleError):
    """A decision that does not name the item, version and reviewer the flow showed, or came
    sooner after the item appeared than a person could have seen it."""


def shown(memory: Memory, *, user, now=None) -> str:
    """The token the flow's form carries: this item at this version, shown to `user` now."""
    at = int((now or timezone.now()).timestamp() * 1000)
    return signing.dumps({"m": memory.pk, "v": memory.row_version, "u": user.pk, "at": at}, salt=SHOWN_SALT)


def check_shown(token: str, *, memory: Memory, user, seen_version: int | None, now=None) -> None:
    """Refuse (NotShown) a decision on anything but what the flow showed this reviewer, at
    least READ_FLOOR_MS ago."""
    if not token:
        raise NotShown("the form did not say which item it showed you; reload the flow and decide again")
    try:
        was = signing.loads(token, salt=SHOWN_SALT)
    except signing.BadSignature:
        raise NotShown("the record of what the page showed you is damaged; reload the flow") from None
    if was["u"] != user.pk:
        raise NotShown("the page that sent it was shown to someone else")
    if was["m"] != memory.pk:
        raise NotShown("the screen showed you another item, not this one")
    if seen_version is None:
        raise NotShown("the form did not say which version you saw; reload the flow and decide again")
    if was["v"] != seen_version:
        raise NotShown(f"the screen showed version {was['v']}, the form says {seen_version}")
    on_screen = int((now or timezone.now()).timestamp() * 1000) - was["at"]
    if on_screen < READ_FLOOR_MS:
        raise NotShown(
            f"it had been on screen for {max(on_screen, 0)} ms, less than the {READ_FLOOR_MS} ms a "
            "person takes to see it; read it, then decide"
        )


def candidates(queue: QuerySet, *, user, skipped=(), now=None) -> QuerySet:
    """The filtered queue as the flow walks it: without items a colleague holds or the reviewer
    skipped, in the queue's own order."""
    held = Claim.objects.held(now).filter(memory=OuterRef("pk")).exclude(holder=user)
    return queue.exclude(pk__in=list(skipped)).exclude(Exists(held))


def arrive(memory: Memory, *, user) -> Claim | None:
    """Claim the item the reviewer arrives at (renewing their own claim). None when a colleague
    took it a moment ago: the flow moves on."""
    try:
        return claims.claim_take(memory=memory, user=user)
    except claims.ClaimError:
        return None


def skip(memory: Memory, *, user) -> None:
    """Leave the item for someone else: the reviewer's claim on it ends."""
    held = claims.held_claim(memory)
    if held is not None and held.holder_id == user.pk:
        claims.claim_release(memory=memory, by=user, note="skipped in the review flow", can_lead=False)


def kill_action(memory: Memory) -> str:
    """What confirming the kill means for this memory: superseded when the vote that put it in
    review says the event replaces it, contradicted otherwise."""
    latest = Verdict.objects.filter(memory=memory, bears__isnull=False).order_by("-created_at", "-id").first()
    replaces = latest.replaces if latest is not None and latest.replaces is not None else 0.0
    return "supersede" if replaces >= REPLACES_AT else "contradict"


@transaction.atomic
def decide(*, memory: Memory, key: str, user, reason: str, shown: str, seen_version: int | None,
           can_lead: bool, request_id: str | None = None, now=None) -> Outcome:  # fmt: skip
    """The move one key makes on the item `shown` (check_shown), through memory_decide (claims,
    row versions, hard TTL); its `move` is what `u` may take back (None when code expired the
    memory instead), and its message names the move and the item."""
    if key not in KEYS:
        raise LifecycleError(f"no decision has the key {key!r}: {', '.join(KEYS)}")
    check_shown(shown, memory=memory, user=user, seen_version=seen_version, now=now)
    action = KEYS[key] if KEYS[key] != "kill" else kill_action(memory)
    outcome = memory_decide(
        memory=memory, action=action, user=user, reason=reason, seen_version=seen_version,
        can_lead=can_lead, request_id=request_id,
    )  # fmt: skip
    if outcome.move is not None:
        outcome.message = DONE[outcome.move.action].format(memory.subject)
    return outcome


def undo_window() -> timedelta:
    return timedelta(seconds=settings.REVIEW_UNDO_SECONDS)


@transaction.atomic
def undo(*, tenant: Tenant, move_id: int, user, request_id: str | None = None, now=None) -> Memory:
    """Take back the reviewer's own decision `move_id`: a `reopen` back to the queue, by them,
    naming the move it undoes. Refused, saying who did what, when anyone (the policy included)
    has moved the memory since, or the window has passed."""
    now = now or timezone.now()
    move = Transition.objects.for_tenant(tenant).filter(pk=move_id, memory__isnull=False).first()
    if move is None or move.actor != str(Actor.user(user)) or move.action not in DECIDED:
        raise UndoRefused("there is no decision of yours to undo")
    if now - move.created_at > undo_window():
        raise UndoRefused(
            f"the decision was made {int((now - move.created_at).total_seconds())} s ago: undo lasts "
            f"{settings.REVIEW_UNDO_SECONDS} s; open the memory to act on it again"
        )
    memory = Memory.objects.select_for_update().get(pk=move.memory_id)
    # A memory's moves in order by the row versions they made: a move may still wait for its seq.
    since = (
        Transition.objects.filter(memory=memory, row_version__gt=move.row_version)
        .order_by("row_version")
        .first()
    )
    if since is not None or memory.row_version != move.row_version:
        who = actor_names([since.actor])[since.actor] if since else "someone"
        what = (
            f"{since.action} ({_words(since.from_status)} → {_words(since.to_status)})"
            if since
            else "a change"
        )
        at = f" at {timezone.localtime(since.created_at):%H:%M}" if since else ""
        raise UndoRefused(f"{who} acted on “{memory.subject}” since: {what}{at}; nothing was undone")
    # Back in the queue for what sent it there: the vote (or person) before the decision.
    flagged = (
        Transition.objects.filter(
            memory=memory, row_version__lt=move.row_version, to_status=MemoryStatus.NEEDS_REVIEW
        )
        .select_related("verdict")
        .order_by("-row_version")
        .first()
    )
    seconds = int((now - move.created_at).total_seconds())
    transition(
        obj=memory, action="reopen", actor=Actor.user(user), seen_version=memory.row_version,
        reason=f"undid {move.action} ({named_move(move)}) {seconds} s later",
        verdict=flagged.verdict if flagged else None, request_id=request_id,
        flagged_for=HELD if flagged is not None and flagged.action == "hold" else None,
    )  # fmt: skip
    return memory


def named_move(move: Transition) -> str:
    """`audit #N`, or the row's id while it waits for its position."""
    return f"audit #{move.seq}" if move.seq is not None else f"transition id {move.pk}"


def _words(status: str) -> str:
    return MemoryStatus(status).label.lower()


@dataclass(frozen=True)
class Progress:
    done_today: int
    left: int
    more_left: bool  # more than `left`: a filtered queue is counted up to a bound
    per_hour: float | None  # the reviewer's pace over the last hour they worked
    more_done: bool = False  # more than `done_today`: a day's moves are read up to a bound


# A person's moves of one day read at most, newest first; past it their day's count says "more
# than". A lead's bulk approval of 250,000 memories in an afternoon was read whole by the flow's
# progress line and by the team page, on every request (136 ms at 2,000,000 memories a tenant).
DAY_READ_MOST = 5_000


@dataclass(frozen=True)
class Day:
    """A person's decisions on memories today and in the last hour, among their newest
    DAY_READ_MOST moves since midnight (or the hour before, if longer)."""

    decided: int
    undone: int  # reopened
    last_hour: int
    first_in_hour: datetime | None  # their first decision in the last hour
    first_today: datetime | None  # their first decision today among those read
    more: bool  # more moves than were read


def day_of(tenant: Tenant, actor: str, *, now) -> Day:
    """One query along the trail's (tenant, actor, created_at) index, newest first, bounded."""
    start = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    hour_ago = now - timedelta(hours=1)
    moves = (
        Transition.objects.for_tenant(tenant)
        .filter(actor=actor, memory__isnull=False, created_at__gte=min(start, hour_ago))
        .order_by("-created_at")[:DAY_READ_MOST]
    )
    decided = Q(action__in=DECIDED)
    counted = moves.aggregate(
        read=Count("pk"),
        today=Count("pk", filter=decided & Q(created_at__gte=start)),
        undone=Count("pk", filter=Q(action="reopen", created_at__gte=start)),
        last_hour=Count("pk", filter=decided & Q(created_at__gte=hour_ago)),
        first_in_hour=Min("created_at", filter=decided & Q(created_at__gte=hour_ago)),
        first_today=Min("created_at", filter=decided & Q(created_at__gte=start)),
    )
    return Day(
        decided=counted["today"],
        undone=counted["undone"],
        last_hour=counted["last_hour"],
        first_in_hour=counted["first_in_hour"],
        first_today=counted["first_today"],
        more=counted["read"] >= DAY_READ_MOST,
    )


def progress(tenant: Tenant, *, user, left: int, more_left: bool = False, now=None) -> Progress:
    """Counted in the database, from the trail's (tenant, actor, created_at) index, up to
    DAY_READ_MOST moves: a reviewer fifty thousand decisions into a busy day costs what one a
    minute in does (their times were read into Python, 50,001 of them, 267 ms)."""
    now = now or timezone.now()
    day = day_of(tenant, str(Actor.user(user)), now=now)
    per_hour = None
    if day.last_hour >= 2:
        span = max((now - day.first_in_hour).total_seconds(), 60.0)
        per_hour = round(day.last_hour * 3600 / span)
    return Progress(
        done_today=day.decided - day.undone,
        left=left,
        more_left=more_left,
        per_hour=per_hour,
        more_done=day.more,
    )
