"""Webhooks (issue 16, item 3): every change to what is in force, posted to the endpoints a tenant
registered, signed as the Standard Webhooks specification says, retried for up to 24 hours.

The outbox is the change feed itself: memories/changes.py writes each change in the transaction
that makes it, at a position that follows commit order. `fan_out` turns the changes past each
endpoint's cursor into one delivery row per endpoint and change (the cursor moves in the same
transaction, so no change is skipped and none gets two rows), and `send` posts one delivery.
Every try of a delivery carries the same `webhook-id`, so a receiver that keeps the ids it has
seen acts on each change once, even when a worker died after the receiver answered.

Delivery is at least once and not in order (a retry overtakes nothing it waits for): the body
carries the change's feed position (`data.seq`), and the feed (GET changes) is the order and
the way to catch up.

A tenant's notices (`notify`: memory health got worse, issue 31) are not changes and have no
place in the feed: each is written once under its key, with its deliveries, in one transaction,
and sent as a change's are."""

import asyncio
import base64
import json
import logging
import os
import secrets
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial

import httpx
from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Count, F, OuterRef, Prefetch, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from standardwebhooks import Webhook

from memory_review.integrity.commits import once_on_commit
from memory_review.memories.models import MemoryChange
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.names import actor_names

from . import feed, shapes, targets
from .models import Notice, WebhookAttempt, WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)

KINDS = tuple(MemoryChange.Kind.values)
# A tenant's notices, heard only by the endpoints that name them: an endpoint that asked for every
# kind (none named) registered for memory changes, and a receiver written for those alone would
# fail on a body of another shape, and be disabled for it.
NOTICE_KINDS = ("health.regressed",)
EVENT_KINDS = (*KINDS, *NOTICE_KINDS)
State = WebhookDelivery.State
FAN_OUT_BATCH = 1000
LOG_PAGE = 200  # deliveries in a page of an endpoint's log
SWEEP_LIMIT = 500  # deliveries a sweep hands to the workers per tenant
SYSTEM = "system:webhooks"
USER_AGENT = "memory-review-webhooks/1"
FAN_OUT_TASK = "memory_review.agents.tasks.fan_out"
DELIVER_TASK = "memory_review.agents.tasks.deliver"


class EndpointRefused(ValueError):
    """An endpoint cannot be registered or changed as asked; `field` names what is wrong."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


class NoticeRefused(ValueError):
    """A notice that cannot be sent as asked (an unknown kind, a blank key); nothing is written."""


# -- endpoints -------------------------------------------------------------------------------


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def clean_kinds(kinds) -> str:
    unknown = sorted(set(kinds) - set(EVENT_KINDS))
    if unknown:
        known = ", ".join(EVENT_KINDS)
        raise EndpointRefused("kinds", f"unknown kind {', '.join(unknown)}; the kinds are {known}")
    return ",".join(kind for kind in EVENT_KINDS if kind in set(kinds))


def endpoint_create(tenant: Tenant, *, url: str, kinds=(), description: str = "", by: str):
    """The new endpoint and its secret (shown to the tenant once). It hears the changes made from
    now on; what came before is in the feed."""
    try:
        targets.check(url)
    except targets.TargetRefused as exc:
        raise EndpointRefused("url", str(exc)) from exc
    secret = new_secret()
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant,
        url=url,
        kinds=clean_kinds(kinds),
        description=(description or "").strip()[:120],
        secret=secret,
        created_by=by,
        cursor=feed.head(tenant),
    )
    return endpoint, secret


def endpoint_disable(endpoint: WebhookEndpoint, *, by: str, reason: str) -> None:
    """Nothing is sent to it until it is enabled; its changes keep their deliveries meanwhile."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk, disabled_at__isnull=True).update(
        disabled_at=timezone.now(), disabled_by=by, disabled_reason=reason[:300]
    )


def endpoint_enable(endpoint: WebhookEndpoint, *, by: str) -> int:
    """Enabled again, with a clean slate; what waited meanwhile is sent now. How many wait."""
    if endpoint.removed_at is not None:
        raise EndpointRefused("endpoint", "was removed: register it again")
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            disabled_at=None, disabled_by=None, disabled_reason="", failure_streak=0, failing_since=None
        )
        waiting = WebhookDelivery.objects.filter(endpoint=endpoint, state=State.PENDING)
        count = waiting.update(next_attempt_at=timezone.now(), queued_at=None)
        tenant_id = endpoint.tenant_id
        transaction.on_commit(lambda: queue_due(tenant_id))  # the sweep queues what a batch leaves
    logger.info("webhook endpoint %s enabled by %s; %s deliveries waiting", endpoint.pk, by, count)
    return count


def endpoint_remove(endpoint: WebhookEndpoint, *, by: str) -> None:
    """Kept, with its log; nothing more is sent to it, and what waited is given up."""
    now = timezone.now()
    with transaction.atomic():
        WebhookEndpoint.objects.filter(pk=endpoint.pk, removed_at__isnull=True).update(
            removed_at=now, removed_by=by
        )
        WebhookDelivery.objects.filter(endpoint=endpoint, state=State.PENDING).update(
            state=State.FAILED, last_error="the endpoint was removed", leased_until=None
        )


def redeliver(delivery: WebhookDelivery, *, by: str) -> None:
    """Send it again, under the same webhook-id (a receiver that saw it may drop it)."""
    endpoint = delivery.endpoint
    if endpoint.removed_at is not None:
        raise EndpointRefused("endpoint", "was removed: nothing is sent to it")
    if delivery.state == State.PENDING:
        raise EndpointRefused("delivery", "is waiting to be sent already")
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        state=State.PENDING, next_attempt_at=timezone.now(), leased_until=None, queued_at=None
    )
    logger.info("webhook delivery %s sent again by %s", delivery.msg_id, by)
    if endpoint.disabled_at is None:
        tenant_id = delivery.tenant_id
        transaction.on_commit(lambda: queue_due(tenant_id))


def endpoints(tenant: Tenant):
    """The tenant's endpoints, newest first, each with how many deliveries wait and have failed."""

    def counted(state: str):  # a count in (endpoint, state): not every delivery an endpoint ever had
        rows = WebhookDelivery.objects.filter(endpoint=OuterRef("pk"), state=state).order_by()
        return Coalesce(Subquery(rows.values("endpoint").annotate(n=Count("pk")).values("n")[:1]), 0)

    return (
        WebhookEndpoint.objects.for_tenant(tenant)
        .annotate(waiting=counted(State.PENDING), given_up=counted(State.FAILED))
        .order_by("-pk")
    )


def log(endpoint: WebhookEndpoint, *, before: int | None = None, limit: int = 50):
    """A page of the endpoint's deliveries, newest first, each with its tries; and the cursor of
    the next page (None at the end)."""
    # The page's ids first, the endpoint as a range and first in the order (as the index has
    # it), so only the (endpoint, -id) index gives it (TenantQuerySet.as_range): by
    # endpoint_id = x PostgreSQL walked the primary key backwards past every newer delivery of
    # other endpoints (20,000 at two tenants). Then their rows with what they show, by id:
    # joined in the first query, the joins steered the plan to hash all 20,000 (360 ms).
    rows = WebhookDelivery.objects.as_range("endpoint_id", endpoint.pk)
    if before is not None:
        rows = rows.filter(pk__lt=before)
    ids = list(rows.order_by("endpoint_id", "-pk").values_list("pk", flat=True)[: limit + 1])
    tries = Prefetch("tries", WebhookAttempt.objects.order_by("number"))
    shown = WebhookDelivery.objects.select_related("change__memory", "notice").prefetch_related(tries)
    found = shown.in_bulk(ids)
    page = [found[pk] for pk in ids]
    return page[:limit], (page[limit - 1].pk if len(page) > limit else None)


def disabled_notices(tenant: Tenant):
    """The endpoints the failures disabled, for the admins' home page."""
    return WebhookEndpoint.objects.for_tenant(tenant).filter(
        disabled_at__isnull=False, disabled_by=SYSTEM, removed_at__isnull=True
    )


# -- the outbox ------------------------------------------------------------------------------


def _enqueue(task: str, *args) -> None:
    try:
        current_app.tasks[task].apply_async(args=args)
    except Exception:  # a broker that is down loses nothing: the sweep finds the rows
        logger.warning("webhooks: could not queue %s%s; the sweep will", task, args, exc_info=True)


def _nudge_key(tenant_id: int) -> str:
    return f"webhooks:fan-out:{tenant_id}"


def nudge(tenant_id: int) -> None:
    """After a change commits: fan it out now. One task is queued for a burst of changes: the
    flag is cleared when the task starts, before it reads, so a change that commits later queues
    the next one."""
    try:
        first = cache.add(_nudge_key(tenant_id), 1, timeout=60)
    except Exception:  # the change is committed and the sweep will find it: never fail its request
        logger.warning("webhooks: the cache did not answer; the sweep will fan out", exc_info=True)
        return
    if first:
        _enqueue(FAN_OUT_TASK, tenant_id)


def on_change(sender, change: MemoryChange, **kwargs) -> None:
    """memories.changes.change_recorded's receiver (connected in apps.py): one nudge a tenant
    when the transaction commits, however many changes it makes (a bulk forget makes hundreds).
    The callbacks waiting on this connection are the record: a rollback drops them with it."""
    if change.seq is not None:  # none yet: the sequencer's `positioned` nudges once it has one
        once_on_commit(("fan-out", change.tenant_id), partial(nudge, change.tenant_id))


def on_positioned(sender, tenant_id: int, **kwargs) -> None:
    """audit.sequencer.positioned's receiver: changes have just been given feed positions (and
    committed), so they can be fanned out."""
    nudge(tenant_id)


def fan_out(tenant_id: int, *, send: bool = True) -> list[int]:
    """A delivery row for each endpoint and each change past its cursor (of the kinds it asked
    for); the new deliveries are queued once they commit. Their ids, oldest change first."""
    try:
        cache.delete(_nudge_key(tenant_id))
    except Exception:  # a nudge may then wait for the flag's minute, or the sweep: nothing is lost
        logger.warning("webhooks: the cache did not answer", exc_info=True)
    made: list[int] = []
    while True:
        with transaction.atomic():
            endpoints = list(
                WebhookEndpoint.objects.filter(tenant_id=tenant_id, removed_at__isnull=True)
                .select_for_update()
                .order_by("pk")
            )
            if not endpoints:
                return made
            low = min(endpoint.cursor for endpoint in endpoints)
            changes = list(
                MemoryChange.objects.filter(tenant_id=tenant_id, seq__gt=low)
                .order_by("seq")
                .values_list("pk", "seq", "kind")[:FAN_OUT_BATCH]
            )
            if not changes:
                return made
            now = timezone.now()
            rows = []
            for endpoint in endpoints:
                wanted = set(endpoint.kind_list) or set(KINDS)
                rows += [
                    _delivery(endpoint, now, send=send, change_id=pk)
                    for pk, seq, kind in changes
                    if seq > endpoint.cursor and kind in wanted
                ]
                endpoint.cursor = max(endpoint.cursor, changes[-1][1])
            ids = _insert(tenant_id, rows, send=send)
            WebhookEndpoint.objects.bulk_update(endpoints, ["cursor"])
            made += ids
        if len(changes) < FAN_OUT_BATCH:
            return made


def _delivery(endpoint: WebhookEndpoint, now: datetime, *, send: bool, **carries) -> WebhookDelivery:
    """A new delivery to the endpoint of what `carries` names (change_id= or notice=)."""
    return WebhookDelivery(
        tenant_id=endpoint.tenant_id,
        endpoint=endpoint,
        msg_id=f"msg_{secrets.token_hex(14)}",
        next_attempt_at=now,
        queued_at=now if send else None,
        **carries,
    )


def _insert(tenant_id: int, rows: list[WebhookDelivery], *, send: bool) -> list[int]:
    """Write the deliveries (sealed); their ids, oldest change first, each queued once they commit."""
    WebhookDelivery.objects.bulk_create(rows, batch_size=500)
    if all(row.pk for row in rows):  # returned by the insert (Oracle returns none: ask)
        ids = [row.pk for row in sorted(rows, key=lambda row: (row.change_id or 0, row.pk))]
    else:
        ids = list(
            WebhookDelivery.objects.filter(msg_id__in=[row.msg_id for row in rows])
            .order_by("change_id", "pk")
            .values_list("pk", flat=True)
        )
    if send:
        transaction.on_commit(lambda: [_enqueue(DELIVER_TASK, tenant_id, pk) for pk in ids])
    return ids


def notify(tenant: Tenant, kind: str, key: str, data: dict, *, send: bool = True) -> Notice | None:
    """Tell the tenant's agents of something that is not a memory change: the notice, written once
    under its kind and key, and in the same transaction a delivery to each endpoint not removed that
    named its kind (a disabled one's waits, as its changes do), queued once they commit. None, and
    nothing written, when a notice of that kind and key was written before. NoticeRefused, with
    nothing written, for a kind that is not a notice's or a key that is blank or too long."""
    if kind not in NOTICE_KINDS:
        raise NoticeRefused(f"unknown notice kind {kind!r}; the notice kinds are {', '.join(NOTICE_KINDS)}")
    if not key or len(key) > Notice._meta.get_field("key").max_length:
        raise NoticeRefused(f"a notice's key is 1 to 120 characters; got {key!r}")
    mine = Notice.objects.for_tenant(tenant).filter(kind=kind, key=key)
    try:
        with transaction.atomic():
            if mine.exists():
                return None
            notice = Notice.objects.create(tenant=tenant, kind=kind, key=key, data=data)
            live = WebhookEndpoint.objects.for_tenant(tenant).filter(removed_at__isnull=True).order_by("pk")
            now = timezone.now()
            rows = [_delivery(e, now, send=send, notice=notice) for e in live if kind in e.kind_list]
            ids = _insert(tenant.pk, rows, send=send)
    except IntegrityError:  # another process wrote the same notice between our look and our write
        if mine.exists():
            return None
        raise
    logger.info("notice %s %s for tenant %s: %s deliveries", kind, key, tenant.pk, len(ids))
    return notice


def due(tenant_id: int, now: datetime | None = None) -> list[int]:
    """Deliveries to queue a try of now: due, held by no worker, and with no task waiting for
    them (none queued since the last try, or the one queued was lost: a broker restart, a worker
    killed holding it)."""
    now = now or timezone.now()
    lost = now - timedelta(seconds=settings.WEBHOOK_LOST_AFTER_SECONDS)
    return list(
        WebhookDelivery.objects.filter(
            tenant_id=tenant_id,
            state=State.PENDING,
            next_attempt_at__lte=now,
            endpoint__disabled_at__isnull=True,
            endpoint__removed_at__isnull=True,
        )
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lte=now))
        .filter(Q(queued_at__isnull=True) | Q(queued_at__lte=lost))
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:SWEEP_LIMIT]
    )


def queue_due(tenant_id: int) -> int:
    """Queue a try of each delivery that is due (`due`), marked queued; how many."""
    ids = due(tenant_id)
    if ids:
        WebhookDelivery.objects.filter(pk__in=ids).update(queued_at=timezone.now())
        for pk in ids:
            _enqueue(DELIVER_TASK, tenant_id, pk)
    return len(ids)


def sweep(tenant_id: int) -> int:
    """Celery beat's job: fan out what a lost nudge left, and queue what is due. How many queued."""
    fan_out(tenant_id)
    return queue_due(tenant_id)


# -- one delivery ----------------------------------------------------------------------------


def payload(delivery: WebhookDelivery) -> str:
    """The body: Standard Webhooks' envelope around the change as the feed gives it, or around
    the notice's data."""
    notice = delivery.notice
    if notice is not None:
        body = {
            "type": notice.kind,
            "timestamp": notice.created_at.isoformat(),
            "tenant": delivery.tenant.slug,
            "data": notice.data,
        }
        return json.dumps(body, separators=(",", ":"))
    change = delivery.change
    data = shapes.change(change, actor_names(shapes.actors([change])))
    body = {
        "type": f"memory.{change.kind}",
        "timestamp": change.created_at.isoformat(),
        "tenant": delivery.tenant.slug,
        "data": data,
    }
    return json.dumps(body, separators=(",", ":"))


def headers(delivery: WebhookDelivery, body: str, at: datetime) -> dict[str, str]:
    return {
        "webhook-id": delivery.msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(delivery.endpoint.secret).sign(delivery.msg_id, at, body),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def _claim(tenant_id: int, pk: int, now: datetime) -> WebhookDelivery | None:
    """Take the delivery for one try, if it is due and no live worker holds it. The claim is one
    UPDATE on the delivery's own row, so of two workers racing for it the second re-reads the
    row the first wrote and finds it held."""
    halted = (
        WebhookDelivery.objects.filter(pk=pk, tenant_id=tenant_id)
        .values_list("endpoint__disabled_at", "endpoint__removed_at")
        .first()
    )
    if halted is None or any(halted):
        return None
    lease = timedelta(seconds=settings.WEBHOOK_DEADLINE_S + 5)  # a try never outlasts its deadline
    with transaction.atomic():
        claimed = (
            WebhookDelivery.objects.filter(pk=pk, state=State.PENDING, next_attempt_at__lte=now)
            .filter(Q(leased_until__isnull=True) | Q(leased_until__lte=now))
            .update(leased_until=now + lease, attempts=F("attempts") + 1)
        )
        if not claimed:
            return None
        delivery = WebhookDelivery.objects.select_related(
            "tenant", "endpoint", "change__memory", "change__transition", "notice"
        ).get(pk=pk)
        delivery.attempt = WebhookAttempt.objects.create(
            tenant_id=tenant_id, delivery=delivery, number=delivery.attempts, started_at=now
        )
    return delivery


class DeadlinePassed(Exception):
    """The try took longer than WEBHOOK_DEADLINE_S, connecting, sending and reading together."""


_local = threading.local()


def _loop_and_client() -> tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]:
    """One event loop and client a thread (its TLS context and kept-alive connections are reused;
    a forked pool process makes its own). No proxies from the environment: they would undo the
    address pin."""
    mine = getattr(_local, "mine", None)
    if mine is None or mine[0] != os.getpid():
        loop = asyncio.new_event_loop()
        mine = _local.mine = (os.getpid(), loop, httpx.AsyncClient(follow_redirects=False, trust_env=False))
    return mine[1], mine[2]


def post(target: targets.Target, body: str, sent_headers: dict[str, str]) -> int:
    """POST to the checked address (the Host header and TLS name stay the URL's); the status code.

    The whole try, from connecting to the status line, ends by WEBHOOK_DEADLINE_S (DeadlinePassed),
    and each step by WEBHOOK_TIMEOUT_S. httpx's timeouts are per step: a receiver trickling a
    byte every 8 s never hits a 10 s read timeout and held a worker for minutes. Cancelling the
    coroutine is what cuts a blocked read at the deadline; a thread cannot be interrupted."""
    loop, client = _loop_and_client()
    return loop.run_until_complete(_post(client, target, body, sent_headers))


async def _post(client: httpx.AsyncClient, target: targets.Target, body: str, sent_headers: dict) -> int:
    request = client.build_request(
        "POST",
        target.pinned_url,
        content=body.encode(),
        headers={**sent_headers, "host": target.host_header},
        timeout=settings.WEBHOOK_TIMEOUT_S,
        extensions={"sni_hostname": target.host},
    )
    try:
        async with asyncio.timeout(settings.WEBHOOK_DEADLINE_S):
            response = await client.send(request, stream=True)
            await response.aclose()  # the body is not read: the status is the answer
    except TimeoutError as exc:
        deadline = settings.WEBHOOK_DEADLINE_S
        raise DeadlinePassed(
            f"no answer within the {deadline:g} s deadline (connect, send and read together)"
        ) from exc
    return response.status_code


OPEN = "open"  # the cache did not answer: tried with no limit, as before there was one


def _answered_key(endpoint_id: int) -> str:
    return f"webhooks:answered-in-time:{endpoint_id}"


def _slots(endpoint_id: int) -> list[str]:
    """The endpoint's in-flight tokens: one until it has answered within the deadline, then
    WEBHOOK_TRIES_AT_ONCE (a try that runs out of time takes it back to one)."""
    at_once = settings.WEBHOOK_TRIES_AT_ONCE if cache.get(_answered_key(endpoint_id)) else 1
    return [f"webhooks:in-flight:{endpoint_id}:{n}" for n in range(at_once)]


@contextmanager
def _endpoint_turn(endpoint_id: int):
    """The in-flight token this try holds (a cache key), None while every one is taken, or OPEN.

    A brand-new endpoint has one token, so a hostile receiver holds one webhook process at a
    time from its first delivery on, not every process for its first deadline; one that answered
    in time has WEBHOOK_TRIES_AT_ONCE. A token lapses at the deadline plus 5 s, as the try's
    lease: a worker that dies holding it blocks its endpoint no longer than that."""
    mine = secrets.token_hex(8)
    try:
        held = next(
            (
                slot
                for slot in _slots(endpoint_id)
                if cache.add(slot, mine, timeout=settings.WEBHOOK_DEADLINE_S + 5)
            ),
            None,
        )
    except Exception:  # no cache: try it, as before the limit, rather than hold every delivery
        logger.warning(
            "webhooks: the cache did not answer; endpoint %s tried unlimited", endpoint_id, exc_info=True
        )
        yield OPEN
        return
    if held is None:
        yield None
        return
    try:
        yield held
    finally:
        try:
            if cache.get(held) == mine:  # not a token that lapsed and another try took since
                cache.delete(held)
        except Exception:  # it lapses at its expiry
            logger.warning("webhooks: the cache did not answer", exc_info=True)


def _put_back(tenant_id: int, endpoint_id: int, pk: int, now: datetime) -> str:
    """Later, not failed: no try is spent. The try holding the turn hands it on when it ends
    (`_hand_on`); the sweep sends it after one deadline if that try's worker died. A try that
    ended between our look and this write handed on without seeing it: so we look again."""
    due_and_free = Q(leased_until__isnull=True) | Q(leased_until__lte=now)  # a repeated task changes nothing
    WebhookDelivery.objects.filter(due_and_free, pk=pk, state=State.PENDING, next_attempt_at__lte=now).update(
        next_attempt_at=now + timedelta(seconds=settings.WEBHOOK_DEADLINE_S), queued_at=None
    )
    try:
        free = not cache.get_many(_slots(endpoint_id))
    except Exception:  # the sweep sends it
        logger.warning("webhooks: the cache did not answer", exc_info=True)
        free = False
    if free:
        _hand_on(tenant_id, endpoint_id)
    return "put back: its endpoint has a try in flight"


def _hand_on(tenant_id: int, endpoint_id: int) -> None:
    """After a try gave its token back: queue the first tries put back meanwhile, oldest first,
    one for each token free now, whether or not their put-back time has come (a try that ran
    out of time ends after it). Only first tries, none queued: a put-back retry keeps its wait
    and the sweep sends it."""
    try:
        slots = _slots(endpoint_id)
        free = len(slots) - len(cache.get_many(slots))
    except Exception:
        free = 1
    waiting = WebhookDelivery.objects.filter(
        endpoint_id=endpoint_id, state=State.PENDING, attempts=0, queued_at__isnull=True
    )
    for pk in waiting.order_by("pk").values_list("pk", flat=True)[: max(free, 0)]:
        now = timezone.now()
        if waiting.filter(pk=pk).update(next_attempt_at=now, queued_at=now):
            _enqueue(DELIVER_TASK, tenant_id, pk)


def send(tenant_id: int, pk: int) -> str:
    """Try one delivery if it is due, no other worker holds it and its endpoint has a free
    in-flight token (`_endpoint_turn`); what became of it."""
    now = timezone.now()
    endpoint_id = (
        WebhookDelivery.objects.filter(pk=pk, tenant_id=tenant_id)
        .values_list("endpoint_id", flat=True)
        .first()
    )
    if endpoint_id is None:
        return "not due"
    with _endpoint_turn(endpoint_id) as turn:
        if turn is None:
            return _put_back(tenant_id, endpoint_id, pk, now)
        delivery = _claim(tenant_id, pk, now)
        if delivery is not None:
            tried = _try(delivery, now)
    if turn != OPEN:
        _hand_on(tenant_id, endpoint_id)
    if delivery is None:
        return "not due"
    return _record(delivery, **tried)


def _try(delivery: WebhookDelivery, now: datetime) -> dict:
    """Post it once; what to record. An answer within the deadline, whatever its code, lets the
    endpoint run WEBHOOK_TRIES_AT_ONCE; running out of time takes it back to one."""
    body = payload(delivery)
    started = time.monotonic()
    code, error, too_slow = None, "", False
    try:
        code = post(targets.check(delivery.endpoint.url), body, headers(delivery, body, now))
        if not 200 <= code < 300:
            error = f"answered {code}"
    except targets.TargetRefused as exc:
        error = f"refused: the URL {exc}"
    except (DeadlinePassed, httpx.TimeoutException) as exc:
        error, too_slow = (str(exc) or type(exc).__name__)[:300], True
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:300] or type(exc).__name__
    latency = round((time.monotonic() - started) * 1000)
    try:
        if too_slow:
            cache.delete(_answered_key(delivery.endpoint_id))
        elif code is not None:
            cache.set(_answered_key(delivery.endpoint_id), 1, timeout=24 * 3600)  # a day unheard: one again
    except Exception:  # the limit is a courtesy to the other endpoints: the try itself is recorded
        logger.warning("webhooks: the cache did not answer", exc_info=True)
    return {"code": code, "error": error, "latency_ms": latency}


def _record(delivery: WebhookDelivery, *, code: int | None, error: str, latency_ms: int) -> str:
    attempt, now = delivery.attempt, timezone.now()
    with transaction.atomic():
        WebhookAttempt.objects.filter(pk=attempt.pk).update(
            latency_ms=latency_ms, code=code, error=error[:300]
        )
        mine = WebhookDelivery.objects.filter(pk=delivery.pk, attempts=attempt.number, state=State.PENDING)
        if not error:
            mine.update(
                state=State.DELIVERED, delivered_at=now, leased_until=None, last_code=code, last_error=""
            )
            WebhookEndpoint.objects.filter(pk=delivery.endpoint_id, failure_streak__gt=0).update(
                failure_streak=0, failing_since=None
            )
            return "delivered"
        schedule = settings.WEBHOOK_RETRY_SECONDS
        if attempt.number > len(schedule):
            mine.update(state=State.FAILED, leased_until=None, last_code=code, last_error=error[:300])
            outcome = "gave up"
        else:
            retry_at = now + timedelta(seconds=schedule[attempt.number - 1])
            mine.update(
                next_attempt_at=retry_at,
                leased_until=None,
                queued_at=None,
                last_code=code,
                last_error=error[:300],
            )
            outcome = "will retry"
        _count_failure(delivery.endpoint_id, now)
    return outcome


def _count_failure(endpoint_id: int, now: datetime) -> None:
    endpoints = WebhookEndpoint.objects.filter(pk=endpoint_id)
    endpoints.update(failure_streak=F("failure_streak") + 1, failing_since=Coalesce("failing_since", now))
    streak, since = endpoints.values_list("failure_streak", "failing_since").get()
    hours = settings.WEBHOOK_DISABLE_AFTER_HOURS
    if streak >= settings.WEBHOOK_DISABLE_AFTER_FAILURES and now - since >= timedelta(hours=hours):
        reason = f"{streak} tries in a row failed since {since:%Y-%m-%d %H:%M} UTC"
        endpoints.filter(disabled_at__isnull=True).update(
            disabled_at=now, disabled_by=SYSTEM, disabled_reason=reason
        )
        logger.warning("webhook endpoint %s disabled: %s", endpoint_id, reason)
