"""The client's own limits: requests a minute, and how long it waits between tries."""

from typesafe_sdk import TypeSafeInternalServerError, TypeSafeRateLimitError

from memory_review.assessments.jev import RateLimiter
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
