"""Long polls on the change feed (issue 27): a crowd of them cannot take every web thread (at
most API_LONG_POLLS_PER_TOKEN open per token, API_LONG_POLLS_PER_PROCESS per process, past
either a 429 naming the limit), and a token revoked while its poll waits gets a 401 at once,
never a change made after the revoke."""

import threading
import time

import pytest
from django.db import connections
from django.test import Client

from memory_review.agents import feed
from memory_review.api import long_polls
from memory_review.tenancy.models import ApiToken
from memory_review.tenancy.tokens import token_create, token_revoke
from tests.factories import make_memory

FEED = "/api/v1/t/acme/changes"


@pytest.fixture
def issued(acme):
    return token_create(tenant=acme, name="support-bot")


def poll(client, token: str, wait: float, after: int = 0):
    return client.get(FEED, {"after": after, "wait": wait}, HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.mark.django_db
def test_it_refuses_a_long_poll_past_the_tokens_limit_with_a_429_naming_it(client, acme, issued, settings):
    settings.API_LONG_POLLS_PER_TOKEN = 2
    row, token = issued
    with long_polls.slot(row.prefix, 30), long_polls.slot(row.prefix, 30):  # two polls already open
        refused = poll(client, token, wait=5)
        not_waiting = poll(client, token, wait=0)

    assert refused.status_code == 429
    assert refused["Retry-After"] == str(long_polls.RETRY_AFTER_SECONDS)
    assert refused.json() == {
        "error": "too many long polls: at most 2 open at once per token; "
        "ask again when one ends, or without wait",
        "limit": "API_LONG_POLLS_PER_TOKEN",
    }
    assert not_waiting.status_code == 200  # a read that does not wait holds no thread
    assert poll(client, token, wait=0.2).status_code == 200  # the open ones ended: room again


@pytest.mark.django_db
def test_another_tokens_polls_do_not_count_against_this_one(client, acme, issued, settings):
    settings.API_LONG_POLLS_PER_TOKEN = 1
    other, _ = token_create(tenant=acme, name="billing-bot")
    with long_polls.slot(other.prefix, 30):
        assert poll(client, issued[1], wait=0.2).status_code == 200


@pytest.mark.django_db
def test_it_refuses_a_long_poll_past_the_processs_limit_whatever_the_token(client, acme, issued, settings):
    settings.API_LONG_POLLS_PER_PROCESS = 1
    other, _ = token_create(tenant=acme, name="billing-bot")
    with long_polls.slot(other.prefix, 30):  # another token's poll holds this process's one place
        refused = poll(client, issued[1], wait=5)

    assert refused.status_code == 429 and refused.json()["limit"] == "API_LONG_POLLS_PER_PROCESS"
    assert "this server holds at most 1 open at once" in refused.json()["error"]
    assert poll(client, issued[1], wait=0.2).status_code == 200


def test_bad_limits_are_refused_at_start_naming_them(tmp_path):
    from tests.web.test_safe_defaults import django_process

    started = django_process(
        "print('up')", {"SECRET_KEY": "k" * 50, "API_LONG_POLLS_PER_TOKEN": "0"}, tmp_path
    )

    assert started.returncode != 0
    assert "API_LONG_POLLS_PER_TOKEN and API_LONG_POLLS_PER_PROCESS are 1 or more" in started.stderr


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ends", ["revoked", "expired"])
def test_a_long_poll_whose_token_is_revoked_while_it_waits_ends_at_once_with_nothing_made_after(
    acme, issued, ends
):
    row, token = issued
    after = feed.head(acme)
    answered = {}

    def long_poll():
        try:
            started = time.monotonic()
            answered["response"] = poll(Client(), token, wait=20, after=after)
            answered["took"] = time.monotonic() - started
        finally:
            connections.close_all()

    waiting = threading.Thread(target=long_poll)
    waiting.start()
    time.sleep(1)  # the poll is waiting: nothing has changed yet
    if ends == "revoked":
        token_revoke(token=row, by="user:1")
    else:
        ApiToken.objects.filter(pk=row.pk).update(expires_at=row.created_at)
    make_memory(acme, subject="made-after-the-revoke")  # within the poll's next look
    waiting.join(30)

    response = answered["response"]
    assert response.status_code == 401
    assert response.json() == {"error": "missing or invalid API token"}
    assert answered["took"] < 10  # at once, not at the end of its 20 s wait
