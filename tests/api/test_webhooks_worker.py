"""Webhooks through a real Celery worker on Redis (issue 16): a decision committed here reaches
the receiver within seconds with no call but the decision's own, and a worker killed with
SIGKILL mid-delivery loses nothing: the lease lets another worker send it again, under the same
webhook-id.

PostgreSQL only, as the other worker drills (tests/assessments/test_worker.py says why)."""

import json
import time
from datetime import timedelta

import pytest
from standardwebhooks import Webhook

from memory_review.agents import webhooks
from memory_review.agents.models import WebhookAttempt, WebhookDelivery
from memory_review.assessments.invalidation import observe_event
from memory_review.assessments.services import policy_ensure_default
from memory_review.celery import app as celery_app
from memory_review.lifecycle import Actor
from memory_review.memories.services import event_record, memory_forget
from tests.assessments.test_worker import BROKER, enqueue, pytestmark, wait_for  # noqa: F401 (pytestmark)
from tests.assessments.test_worker import workers as pool  # noqa: F401 (the worker drill's fixture)
from tests.factories import make_memory
from tests.webhook_receiver import Receiver

LOOPBACK = {"WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8", "WEBHOOK_RETRY_SECONDS": "1,1,1,1,1"}


@pytest.fixture
def receiver():
    serving = Receiver()
    yield serving
    serving.stop()


@pytest.fixture
def on_the_workers_broker(settings):
    """This process queues its tasks where the drill's workers listen (the suite's own broker is
    in-memory, so a test never feeds a developer's worker)."""
    settings.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.0/8"]
    before = celery_app.conf.broker_url
    celery_app.conf.broker_url = BROKER
    celery_app._pool, celery_app.amqp._producer_pool = None, None
    yield
    celery_app.conf.broker_url = before
    celery_app._pool, celery_app.amqp._producer_pool = None, None


@pytest.mark.parametrize("pool", [LOOPBACK], indirect=True)
def test_a_forget_reaches_the_receiver_within_seconds_by_the_commit_alone(
    acme,
    pool,  # noqa: F811 (the fixture imported above)
    receiver,
    on_the_workers_broker,  # noqa: F811 (the fixture imported above)
):
    memory = make_memory(acme, subject="home-address", content="Lives at 12 Elm Street.")
    endpoint, secret = webhooks.endpoint_create(acme, url=receiver.url, by="user:1")
    pool.start("hooks")
    time.sleep(1)  # the worker is up before the decision, as in production

    decided = time.monotonic()
    memory_forget(memory=memory, actor=Actor("user", "7"), reason="asked", seen_version=memory.row_version)
    wait_for(lambda: len(receiver.received) >= 1, 20, "the forget to be posted")
    took = time.monotonic() - decided

    [got] = receiver.received
    body = Webhook(secret).verify(got.body, got.headers)
    assert (body["type"], body["data"]["memory_id"], body["data"]["tombstone"]) == (
        "memory.forgotten",
        memory.pk,
        True,
    )
    assert took < 10  # the target is p95 <= 2 s (bench/webhooks.py); this bounds the drill only
    wait_for(lambda: WebhookDelivery.objects.filter(state="delivered").count() == 1, 10, "the log")


@pytest.mark.parametrize(
    "pool",
    [
        {
            **LOOPBACK,
            "WEBHOOK_TIMEOUT_S": "3",
            "WEBHOOK_DEADLINE_S": "3",
            "WEBHOOK_SWEEP_SECONDS": "1",
            "WEBHOOK_LOST_AFTER_SECONDS": "2",
            "CELERY_VISIBILITY_TIMEOUT": "600",
        }
    ],
    indirect=True,
)
def test_a_worker_killed_mid_delivery_loses_nothing_and_the_resend_keeps_the_webhook_id(
    acme,
    pool,  # noqa: F811 (the fixture imported above)
    receiver,
    on_the_workers_broker,
    tmp_path,  # noqa: F811 (the fixture imported above)
):
    receiver.delay = 1.5  # long enough to kill the worker while the receiver holds the request
    webhooks.endpoint_create(acme, url=receiver.url, by="user:1")
    first = pool.start("first")
    time.sleep(1)
    memories = [make_memory(acme, subject=f"plan-{n}") for n in range(4)]

    wait_for(lambda: len(receiver.received) >= 1, 20, "the first delivery to arrive")
    pool.kill(first)  # SIGKILL mid-send: its try stays open, its lease runs out
    pool.start("second")
    pool.start_beat(tmp_path / "beat-schedule")
    wait_for(
        lambda: WebhookDelivery.objects.filter(state="delivered").count() == len(memories),
        60,
        "every delivery to be made by the second worker",
    )

    by_id: dict[str, set[int]] = {}
    for got in receiver.received:
        by_id.setdefault(got.headers["webhook-id"], set()).add(json.loads(got.body)["data"]["memory_id"])
    assert sorted(pk for pks in by_id.values() for pk in pks) == sorted(m.pk for m in memories)
    assert all(len(pks) == 1 for pks in by_id.values())  # a repeat carries its change's id
    assert len(by_id) == len(memories)
    assert WebhookAttempt.objects.filter(latency_ms__isnull=True).count() >= 1  # the killed try


@pytest.mark.parametrize(
    "pool",
    [{**LOOPBACK, "WEBHOOK_DEADLINE_S": "8", "WEBHOOK_TIMEOUT_S": "10", "CACHE_URL": BROKER}],
    indirect=True,
)
def test_a_new_trickling_receiver_holds_one_webhook_process_and_another_tenants_event_goes_straight_on(
    acme,
    globex,
    standin,
    pool,  # noqa: F811 (the fixture imported above)
    receiver,
    on_the_workers_broker,  # noqa: F811 (the fixture imported above)
):
    """The issue's stall: a receiver trickling its answer held every worker for minutes, and
    another tenant's event waited behind it. Now webhook tries have their own workers, each cut
    off at the deadline, and an endpoint has one try in flight until it has answered in time:
    from its very first deliveries, not from the first try that ran out of time."""
    trickling = Receiver(trickle=1.0)  # a byte a second: its answers would take 40 s each
    try:
        webhooks.endpoint_create(acme, url=trickling.url, by="user:1")
        policy_ensure_default(tenant=globex, created_by="test")
        paris = make_memory(globex, subject="delivery-address", content="Deliveries go to the Paris office.")
        webhooks.endpoint_create(globex, url=receiver.url, by="user:1")  # hears what the event changes
        pool.start("judge", "-Q", "celery")
        pool.start("hooks-1", "-Q", "webhooks")
        pool.start("hooks-2", "-Q", "webhooks")
        time.sleep(1)
        for n in range(4):  # more tries than there are webhook workers, queued at once
            make_memory(acme, subject=f"plan-{n}")
        wait_for(lambda: len(trickling.received) >= 1, 20, "the trickle to hold a webhook worker")
        time.sleep(1)  # the other worker has taken the rest of its deliveries and put them back
        in_flight = len(trickling.received)

        started = time.monotonic()
        event = event_record(
            tenant=globex, source="chat", text="From now on deliveries go to the Lyon office."
        )
        enqueue(observe_event(event=event, enqueue=lambda assessment: None))
        wait_for(lambda: len(receiver.received) >= 1, 30, "globex's change to reach its receiver")
        took = time.monotonic() - started
        ended = WebhookAttempt.objects.filter(delivery__endpoint__tenant=acme).exclude(latency_ms=None)
        wait_for(lambda: ended.count() >= 2, 30, "two of the trickle's tries to end at the deadline")
        tries = list(ended.order_by("started_at").values_list("error", "latency_ms", "started_at"))
    finally:
        trickling.stop()

    judged = json.loads(receiver.received[0].body)
    assert (judged["type"], judged["data"]["memory_id"]) == ("memory.moved", paris.pk)  # judged, then posted
    assert in_flight == 1  # one webhook process held by the new endpoint, not both
    assert took < 4  # during the trickle's first deadline (8 s): no wave of it held both workers
    assert all(error.startswith("no answer within the 8 s deadline") for error, _, _ in tries)
    assert all(latency_ms < 11000 for _, latency_ms, _ in tries)  # the deadline and 3 s, not 40 s
    (_, first_took, first_began), (_, _, then) = tries[:2]
    assert then - first_began >= timedelta(milliseconds=first_took)  # one after the other
    assert not WebhookDelivery.objects.filter(endpoint__tenant=acme, state="failed").exists()
