"""The client's own limits: requests a minute, and how long it waits between tries."""

from typesafe_sdk import TypeSafeInternalServerError, TypeSafeRateLimitError

from memory_review.assessments.jev import RateLimiter, noul
from tests.factories import make_jev


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


def test_requests_in_flight_run_on_threads_the_process_keeps_from_event_to_event(standin, monkeypatch):
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
    monkeypatch.setattr("memory_review.assessments.jev.os.getpid", lambda: -1)
    assert jev._request_threads() is not inherited
    assert jev.submit(state, questions).result(timeout=10).votes.keys() == {"bears_0"}
