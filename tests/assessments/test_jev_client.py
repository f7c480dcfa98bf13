"""The client's own limits: requests a minute (a process's, or one budget every process shares in
Redis), and how long it waits between tries."""

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
from django.test import override_settings
from typesafe_sdk import TypeSafeInternalServerError, TypeSafeRateLimitError

from memory_review.assessments.jev import RateLimiter, SharedRateLimiter, get_jev, noul
from tests.factories import TEST_REDIS, make_jev, redis_up

REDIS = TEST_REDIS
ROOT = Path(__file__).resolve().parents[2]


# Under CI a missing Redis is a failure, never a quiet skip (.ci/run starts it).
needs_redis = pytest.mark.skipif(
    not os.environ.get("CI") and not redis_up(), reason=f"needs Redis at {REDIS}"
)


@pytest.fixture
def budget():
    """A budget's key of its own in the test Redis, removed after."""
    key = f"test:jev-budget:{os.urandom(6).hex()}"
    yield key
    redis.Redis.from_url(REDIS).delete(key)


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_rate_limit_lets_a_burst_through_and_then_waits_for_the_window():
    clock = FakeClock()
    limiter = RateLimiter(3, clock=clock, sleep=clock.sleep)

    for _ in range(3):
        limiter.acquire()
    assert clock.slept == []

    clock.now = 10.0
    limiter.acquire()  # the fourth in the same minute waits until the first is a minute old

    assert clock.slept == [50.0]
    assert clock.now == 60.0


def test_a_retry_after_longer_than_the_backoff_is_honoured():
    jev = make_jev("http://127.0.0.1:9", backoff_s=0.5, backoff_max_s=8)
    limited = TypeSafeRateLimitError.__new__(TypeSafeRateLimitError)
    limited.retry_after_ms = 3000.0
    failing = TypeSafeInternalServerError.__new__(TypeSafeInternalServerError)

    assert jev._delay(limited, attempt=1) == 3.0
    assert jev._delay(failing, attempt=1) == 0.5
    assert jev._delay(failing, attempt=3) == 2.0
    assert jev._delay(failing, attempt=10) == 8.0


def test_requests_in_flight_run_on_threads_the_process_keeps_from_event_to_event(standin):
    jev = make_jev(standin.url, max_concurrency=3)
    state = {"event": {"text": "moved to Lisbon", "source": "chat"}, "memories": [{"fact": "lives in Porto"}]}
    questions = {"bears_0": noul("bears_0", "Is `event.text` about `memories[0].fact`?", "", "")}

    def one_event() -> set[int]:
        replies = [future.result(timeout=10) for future in [jev.submit(state, questions) for _ in range(6)]]
        assert all(0 <= reply.votes["bears_0"] <= 1 for reply in replies)
        return {thread.ident for thread in jev._request_threads()._threads}

    first, second = one_event(), one_event()
    assert second == first  # the same threads, not six new ones an event
    assert 1 <= len(first) <= 3  # no more than the client's concurrency

    # A pool process forked after the client was made starts threads of its own: the executor it
    # inherited counts its parent's idle threads, which the child does not have.
    inherited = jev._request_threads()
    jev._threads = (-1, inherited)  # as a child sees them: made by another process
    assert jev._request_threads() is not inherited
    assert jev.submit(state, questions).result(timeout=10).votes.keys() == {"bears_0"}


TAKE_FROM_THE_BUDGET = """
import sys
from memory_review.assessments.jev import RateLimiter, SharedRateLimiter
url, key = sys.argv[1], sys.argv[2]
limiter = SharedRateLimiter(url, key, 10, fallback=RateLimiter(1000))
print(sum(limiter.acquire(most_s=0) for _ in range(8)))
"""


@needs_redis
def test_every_process_takes_from_one_budget(budget):
    # Three processes, as three hosts' pool processes would be, each asking eight times at once
    # of a budget of ten a minute: ten go ahead in all, whichever process asked.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_review.settings", "PYTHONPATH": str(ROOT)}
    hosts = [
        subprocess.Popen(
            [sys.executable, "-c", TAKE_FROM_THE_BUDGET, REDIS, budget],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    admitted = [int(host.communicate(timeout=60)[0]) for host in hosts]
    assert all(host.returncode == 0 for host in hosts)
    assert sum(admitted) == 10, admitted
    # Each with its own process's limit of 1,000, they would have taken all 24.
    assert redis.Redis.from_url(REDIS).zcard(budget) == 10


@needs_redis
def test_a_full_budget_waits_until_its_oldest_request_leaves_the_window(budget):
    limiter = SharedRateLimiter(REDIS, budget, 2, fallback=RateLimiter(1000), window_s=1.0)
    assert limiter.acquire(most_s=0) and limiter.acquire(most_s=0)

    assert limiter.acquire(most_s=0.2) is False  # the window is full for about another second
    assert redis.Redis.from_url(REDIS).zcard(budget) == 2  # and the refused one reserved nothing
    started = time.monotonic()
    assert limiter.acquire(most_s=3) is True
    assert 0.4 < time.monotonic() - started < 2.5


@needs_redis
def test_waiters_for_a_full_budget_go_in_turn_each_asking_once(budget):
    limiter = SharedRateLimiter(REDIS, budget, 1, fallback=RateLimiter(1000), window_s=0.5)
    asked = []
    take = limiter.take
    limiter.take = lambda **kwargs: asked.append(1) or take(**kwargs)
    admitted = []

    def wait_for_a_place():
        assert limiter.acquire()
        admitted.append(time.monotonic())

    threads = [threading.Thread(target=wait_for_a_place) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert len(admitted) == 4 and len(asked) == 4  # each reserved its place: none asked again
    # The places Redis gave, a window apart: one a half-second, never two in one.
    places = [at for _, at in redis.Redis.from_url(REDIS).zrange(budget, 0, -1, withscores=True)]
    assert [b - a for a, b in zip(places, places[1:], strict=False)] == [500, 500, 500]
    assert max(admitted) - min(admitted) > 1.4  # and each slept until its own came


def test_a_budget_out_of_reach_counts_in_the_process_and_says_so(caplog):
    clock = FakeClock()
    fallback = RateLimiter(1, clock=clock, sleep=clock.sleep)
    limiter = SharedRateLimiter(
        "redis://127.0.0.1:9/0", "test:unreachable", 50, fallback=fallback, clock=clock
    )

    asked = []
    take = limiter.take
    limiter.take = lambda **kwargs: asked.append(1) or take(**kwargs)
    with caplog.at_level(logging.WARNING, logger="memory_review.assessments.jev"):
        assert limiter.acquire(most_s=0) is True
        assert limiter.acquire(most_s=0) is False  # the process's own limit of one a minute
        assert len(asked) == 1  # Redis is not asked again for the next ten seconds

        clock.now += 11  # then it is, once more
        assert limiter.acquire(most_s=0) is False
        assert len(asked) == 2

    warnings = [r for r in caplog.records if "shared budget is out of reach" in r.getMessage()]
    assert len(warnings) == 1  # once a minute, not once a request


@needs_redis
def test_the_settings_give_every_process_the_shared_budget(standin):
    # Each override makes get_jev() a client of its own (jev._forget_client), and its end another.
    with override_settings(
        JEV_SHARED_REQUESTS_PER_MINUTE=50,
        REDIS_URL=REDIS,
        JEV_STANDIN_URL=standin.url,
        TYPESAFE_API_KEY="",
    ):
        jev = get_jev()
        assert isinstance(jev.limiter, SharedRateLimiter) and jev.limiter.limit == 50
        redis.Redis.from_url(REDIS).delete(jev.limiter.key)  # what an earlier run left
        assert "offline-standin" not in jev.limiter.key  # a digest of the API key, never the key
        state = {"event": {"text": "moved", "source": "chat"}, "memories": [{"fact": "lives in Porto"}]}
        jev.ask(state, {"bears_0": noul("bears_0", "Is `event.text` about `memories[0].fact`?", "", "")})
        assert redis.Redis.from_url(REDIS).zcard(jev.limiter.key) == 1
        redis.Redis.from_url(REDIS).delete(jev.limiter.key)
    with override_settings(JEV_SHARED_REQUESTS_PER_MINUTE=0):
        assert isinstance(get_jev().limiter, RateLimiter)  # off: each process counts its own


def test_the_process_client_follows_a_changed_setting(standin, settings):
    """get_jev() is made once a process; a setting changed after (as a test does) is not left
    behind with the old client, which once pointed the next test's tasks at a stopped stand-in."""
    settings.TYPESAFE_API_KEY, settings.JEV_STANDIN_URL = "", "http://127.0.0.1:9"  # nothing listens
    before = get_jev()
    assert get_jev() is before  # one a process

    settings.JEV_STANDIN_URL = standin.url

    state = {"event": {"text": "moved", "source": "chat"}, "memories": [{"fact": "lives in Porto"}]}
    question = {"bears_0": noul("bears_0", "Is `event.text` about `memories[0].fact`?", "", "")}
    reply = get_jev().ask(state, question)
    assert get_jev() is not before and reply.standin
