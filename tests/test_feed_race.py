"""The change feed never skips a change committed before one already served (issue 16).
Concurrent transactions commit out of id order; the feed's positions are given to committed
changes only, by the tenant's one sequencer (or, inline, under the tenant's chain head), so they
follow commit order. PostgreSQL only: SQLite has one writer at a
time, so nothing there can commit out of order."""

import threading
import time

import pytest
from django.db import connection, connections, transaction

from memory_review.agents import feed
from memory_review.audit import sequencer, verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, MemoryChange
from tests.factories import make_memory

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite has one writer at a time (make test runs the PostgreSQL pass)",
    ),
    pytest.mark.django_db(transaction=True),
]


def flag(pk: int, who: str) -> None:
    memory = Memory.objects.get(pk=pk)
    transition(
        obj=memory, action="flag", actor=Actor("user", who), reason="racing", seen_version=memory.row_version
    )


def test_a_change_held_open_is_never_skipped_by_one_that_started_after_it(acme):
    first, second = make_memory(acme), make_memory(acme)
    cursor = feed.head(acme)
    holding, release = threading.Event(), threading.Event()

    def slow_writer():
        try:
            with transaction.atomic():
                flag(first.pk, "1")
                holding.set()
                release.wait(10)  # committed only when the test says so
        finally:
            connections.close_all()

    def quick_writer():
        try:
            flag(second.pk, "2")  # starts after the slow one took its position; must queue behind it
        finally:
            connections.close_all()

    slow = threading.Thread(target=slow_writer)
    slow.start()
    assert holding.wait(10)
    quick = threading.Thread(target=quick_writer)
    quick.start()
    time.sleep(0.5)
    while_open = feed.read(acme, cursor)  # neither has committed: nothing to serve yet
    release.set()
    slow.join(10)
    quick.join(10)
    after = feed.read(acme, while_open.cursor)

    assert while_open.changes == [] and while_open.cursor == cursor
    assert [(c.memory_id, c.seq) for c in after.changes] == [(first.pk, cursor + 1), (second.pk, cursor + 2)]


@pytest.mark.parametrize("sequencing", ["inline", "deferred"])
def test_a_reader_following_eight_racing_writers_sees_every_change_once_in_order(acme, settings, sequencing):
    """Inline, each writer links its rows under the tenant's head; deferred (production), the
    writers lock nothing shared and the sequencer positions what has committed (run here in each
    writer's thread after its commit, as an eager Celery task)."""
    settings.AUDIT_SEQUENCER, settings.CELERY_TASK_ALWAYS_EAGER = sequencing, sequencing == "deferred"
    memories = [make_memory(acme) for _ in range(80)]
    start = feed.head(acme)
    done = threading.Event()
    seen: list[int] = []

    def writer(chunk: list[Memory], who: str):
        try:
            for memory in chunk:
                flag(memory.pk, who)
        finally:
            connections.close_all()

    def reader():
        cursor = start
        try:
            while not done.is_set() or cursor < start + len(memories):
                page = feed.read(acme, cursor, limit=7, wait=0.5)
                seen.extend(change.seq for change in page.changes)
                cursor = page.cursor
        finally:
            connections.close_all()

    follow = threading.Thread(target=reader)
    follow.start()
    writers = [threading.Thread(target=writer, args=(memories[i::8], str(i + 1))) for i in range(8)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(60)
    assert not sequencer.waiting(acme.pk)  # each commit's nudge linked what had committed
    done.set()
    follow.join(60)

    assert seen == list(range(start + 1, start + len(memories) + 1))  # none skipped, none twice
    flagged = MemoryChange.objects.filter(seq__gt=start).values_list("memory_id", flat=True)
    assert sorted(flagged) == sorted(m.pk for m in memories)
    seqs = list(Transition.objects.filter(tenant=acme).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(memories) + 1))  # one gap-free chain
    assert verification.problem_in(acme) is None


def test_of_two_workers_claiming_one_delivery_at_once_only_one_sends_it(acme, settings):
    """The webhook claim is one UPDATE on the delivery's own row: the second of two racing
    workers waits for the first's commit, re-reads the row and finds it held (issue 16)."""
    from django.utils import timezone

    from memory_review.agents import webhooks
    from memory_review.agents.models import WebhookAttempt, WebhookDelivery

    settings.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.0/8"]
    webhooks.endpoint_create(acme, url="http://127.0.0.1:9/hooks", by="user:1")
    make_memory(acme)
    webhooks.fan_out(acme.pk, send=False)
    delivery = WebhookDelivery.objects.get()
    start, claimed = threading.Barrier(8), []

    def worker():
        try:
            start.wait(10)
            claimed.append(webhooks._claim(acme.pk, delivery.pk, timezone.now()) is not None)
        finally:
            connections.close_all()

    racers = [threading.Thread(target=worker) for _ in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(20)

    assert sorted(claimed) == [False] * 7 + [True]
    assert WebhookDelivery.objects.get().attempts == 1
    assert WebhookAttempt.objects.count() == 1
