"""List, then watch, with writers racing the snapshot (issue 28): a change committed while GET
memories reads, or held open across it, is never lost to an agent that follows the feed from the
answer's cursor. PostgreSQL only: SQLite has one writer at a time (tests/test_feed_race.py)."""

import threading

import pytest
from django.db import connection, connections, transaction

from memory_review.agents import feed
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.tenancy.tokens import token_create
from tests.factories import make_memory

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite has one writer at a time (make test runs the PostgreSQL pass)",
    ),
    pytest.mark.django_db(transaction=True),
]


def in_another_connection(work) -> threading.Thread:
    def run():
        try:
            work()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def freeze(pk: int) -> None:
    memory = Memory.objects.get(pk=pk)
    transition(
        obj=memory,
        action="freeze",
        actor=Actor("user", "7"),
        reason="pinned",
        seen_version=memory.row_version,
    )


def read(client, token: str) -> dict:
    answer = client.get("/api/v1/t/acme/memories", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_a_change_committed_between_the_head_and_the_rows_is_in_the_rows_and_heard_again(
    client, acme, monkeypatch
):
    token = token_create(tenant=acme, name="support-bot")[1]
    memory = make_memory(acme)
    real_head = feed.head

    def head_then_a_commit(tenant):
        found = real_head(tenant)
        in_another_connection(lambda: freeze(memory.pk)).join(10)  # commits before the rows are read
        return found

    monkeypatch.setattr(feed, "head", head_then_a_commit)
    answer = read(client, token)
    monkeypatch.undo()

    assert answer["memories"][0]["status"] == "frozen"  # the rows already hold it ...
    heard = feed.read(acme, answer["cursor"]).changes
    assert [(c.memory_id, c.transition.to_status) for c in heard] == [
        (memory.pk, "frozen")
    ]  # ... and it comes again


def test_a_change_held_open_across_the_snapshot_is_after_its_cursor(client, acme):
    token = token_create(tenant=acme, name="support-bot")[1]
    memory = make_memory(acme)
    holding, release = threading.Event(), threading.Event()

    def slow_freeze():
        with transaction.atomic():
            freeze(memory.pk)  # takes its feed position under the chain lock, and keeps it
            holding.set()
            release.wait(10)

    writer = in_another_connection(slow_freeze)
    assert holding.wait(10)
    answer = read(client, token)
    release.set()
    writer.join(10)

    assert answer["memories"][0]["status"] == "active"  # not committed when the rows were read
    heard = feed.read(acme, answer["cursor"]).changes  # nor at the head read: it is after the cursor
    assert [(c.memory_id, c.transition.to_status) for c in heard] == [(memory.pk, "frozen")]
