"""The same receipt sent twice is written once (issue 27, item 7): an agent that retries a batch
whose answer it never saw must not double a memory's count of responses, nor its count of
responses while wrong."""

import json
import threading

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from memory_review.agents import receipts
from memory_review.agents.models import Receipt
from memory_review.tenancy.tokens import token_create
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(acme, policy):
    return token_create(tenant=acme, name="support-bot")[1]


def send(client, token, responses):
    return client.post(
        "/api/v1/t/acme/receipts",
        json.dumps({"responses": responses}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def used(rid: str, memories, at=None) -> dict:
    return {
        "response_id": rid,
        "used_at": (at or timezone.now()).isoformat(),
        "scope": {"user_id": "cust-1"},
        "memories": [{"id": m.pk, "version": m.version} for m in memories],
    }


def test_it_writes_a_batch_sent_twice_once_and_says_the_second_was_already_recorded(client, acme, token):
    first, second = make_memory(acme), make_memory(acme)
    batch = [used("r-1", [first, second]), used("r-2", [first])]

    once = send(client, token, batch)
    again = send(client, token, batch)

    assert once.status_code == 201 and once.json() == {"recorded": 3, "already_recorded": 0}
    assert again.status_code == 201 and again.json() == {"recorded": 0, "already_recorded": 3}
    assert Receipt.objects.count() == 3
    assert receipts.usage(first).responses == 2


def test_a_batch_that_repeats_itself_is_written_once_and_new_uses_beside_old_ones_are_written(
    client, acme, token
):
    memory, other = make_memory(acme), make_memory(acme)
    send(client, token, [used("r-1", [memory])])

    answer = send(client, token, [used("r-1", [memory, memory, other]), used("r-2", [memory])])

    assert answer.json() == {"recorded": 2, "already_recorded": 2}
    assert sorted(Receipt.objects.values_list("response_id", "memory_id")) == sorted(
        [("r-1", memory.pk), ("r-1", other.pk), ("r-2", memory.pk)]
    )


def test_an_event_that_carries_receipts_sent_twice_writes_them_once(client, acme, token):
    memory = make_memory(acme)
    body = {"text": "Moved to Lyon.", "source": "chat", "receipts": [used("r-1", [memory])]}

    for _ in range(2):
        response = client.post(
            "/api/v1/t/acme/events",
            json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert response.status_code == 202

    assert Receipt.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_sends_of_one_batch_at_once_write_it_once(acme, token):
    if connection.vendor != "postgresql":
        pytest.skip("select_for_update is a no-op on SQLite: make test's PostgreSQL pass runs this")
    memories = [make_memory(acme) for _ in range(5)]
    batch = [used(f"r-{n}", memories) for n in range(20)]
    answers, start = [], threading.Barrier(2)

    def sender():
        try:
            start.wait()
            answers.append(send(Client(), token, batch).json())
        finally:
            connection.close()  # this thread's own

    threads = [threading.Thread(target=sender) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert Receipt.objects.count() == 100
    assert sorted(answer["recorded"] for answer in answers) == [0, 100]
