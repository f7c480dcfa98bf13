"""The Jev client: the real typesafe-sdk over HTTP, with retries and limits this app owns.

The SDK can retry by itself, but an assessment records how many tries each request took and
how long they took, so the SDK's retries are off and this module retries instead: 429, 5xx,
timeouts and connection errors, with exponential backoff that honours `retry-after`, a bounded
number of times. A malformed body is not retried (asking again would not fix it).

With no TYPESAFE_API_KEY the same SDK points at the offline stand-in (`manage.py jev_standin`),
which says so in a response header; the assessment records it and every page shows it.
"""

import hashlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

import redis
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from typesafe_sdk import (
    Noul,
    RetryPolicy,
    TypeSafeAPIConnectionError,
    TypeSafeAPIError,
    TypeSafeAPIResponseValidationError,
    TypeSafeClient,
    TypeSafeRateLimitError,
)

STANDIN_HEADER = "x-typesafe-standin"
logger = logging.getLogger(__name__)


class JevError(Exception):
    """Jev could not answer after the last try. Nothing may change because of this request."""

    def __init__(self, message: str, *, tries: int):
        super().__init__(message)
        self.tries = tries


@dataclass(frozen=True)
class JevReply:
    votes: dict[str, float]
    model: str
    input_tokens: int
    latency_ms: int
    tries: int
    standin: bool


def cost_usd(input_tokens: int) -> Decimal:
    rate = Decimal(str(settings.JEV_USD_PER_MILLION_INPUT))
    return (Decimal(input_tokens) * rate / Decimal(1_000_000)).quantize(Decimal("0.00000001"))


class RateLimiter:
    """At most `per_minute` requests in any sixty seconds from this process (Jev allows 1,200 a
    minute). Bursts are not smoothed: a large event's screening requests go out together."""

    def __init__(
        self,
        per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.limit = per_minute
        self.clock, self.sleep = clock, sleep
        self.sent: deque[float] = deque()
        self.lock = threading.Lock()

    def acquire(self, most_s: float | None = None) -> bool:
        """Take a place in the minute, waiting for one; False, without one, when that would take
        longer than `most_s` in all (a request someone waits on)."""
        until = None if most_s is None else self.clock() + most_s
        while True:
            with self.lock:
                now = self.clock()
                while self.sent and now - self.sent[0] >= 60:
                    self.sent.popleft()
                if len(self.sent) < self.limit:
                    self.sent.append(now)
                    return True
                wait = 60 - (now - self.sent[0])
            if until is not None and now + wait > until:
                return False
            self.sleep(wait)


# A sliding log in one sorted set: each request's moment, by Redis's own clock (the hosts' clocks
# need not agree). A request finding the window full reserves the first moment it may go, a window
# after the request `limit` places before it, and is told how long to sleep: waiters go in the
# order they asked, each with one round trip, not all waking together to ask again. A caller that
# cannot wait that long (`most`, ms; -1 for no bound) reserves nothing and is told the wait,
# negated. Atomic: one script at a time runs in Redis.
_TAKE = """
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local limit, window, most = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
local at = now
if n >= limit then
  at = tonumber(redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')[2]) + window
  if most >= 0 and at - now > most then
    return now - at
  end
end
redis.call('ZADD', KEYS[1], at, ARGV[3])
redis.call('PEXPIRE', KEYS[1], at - now + window)
return at - now
"""


class SharedRateLimiter:
    """At most `per_minute` requests in any sixty seconds from every process of every host that
    asks the same Redis under the same key: Jev counts a key's requests, not a process's. One
    Redis round trip a request (`_TAKE`). When Redis does not answer within half a second, the
    process's own limiter (`fallback`) counts instead for `down_s`, and the log says so at most
    once a minute."""

    def __init__(
        self,
        url: str,
        key: str,
        per_minute: int,
        *,
        fallback: RateLimiter,
        window_s: float = 60.0,
        down_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.limit, self.key, self.window_ms = per_minute, key, max(1, round(window_s * 1000))
        self.fallback, self.down_s, self.clock, self.sleep = fallback, down_s, clock, sleep
        client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self.take = client.register_script(_TAKE)
        self.down_until = float("-inf")
        self.warned_at: float | None = None

    def acquire(self, most_s: float | None = None) -> bool:
        """As RateLimiter.acquire: a place in the window, waiting for one; False, without one,
        when that would take longer than `most_s`."""
        if self.clock() < self.down_until:
            return self.fallback.acquire(most_s)
        most_ms = -1 if most_s is None else max(0, int(most_s * 1000))
        member = os.urandom(8).hex()
        try:
            wait_ms = int(self.take(keys=[self.key], args=[self.limit, self.window_ms, member, most_ms]))
        except redis.RedisError:
            self.down_until = self.clock() + self.down_s  # not half a second lost on every request
            self._warn()
            return self.fallback.acquire(most_s)
        if wait_ms < 0:
            return False
        if wait_ms:
            self.sleep(wait_ms / 1000)  # the place is reserved: no asking again
        return True

    def _warn(self) -> None:
        now = self.clock()
        if self.warned_at is None or now - self.warned_at >= 60:
            self.warned_at = now
            logger.warning(
                "Jev's shared budget is out of reach (Redis did not answer): this process counts its "
                "own requests, JEV_REQUESTS_PER_MINUTE, until it answers again",
                exc_info=True,
            )


def budget_key(api_key: str) -> str:
    """The Redis key a Jev key's shared budget is counted under: a digest of the key, which is a
    secret and is never written anywhere."""
    return (
        f"{settings.CACHES['default'].get('KEY_PREFIX') or 'memory-review'}:jev-budget:"
        + (hashlib.sha256(api_key.encode()).hexdigest()[:24])
    )


class Jev:
    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None,
        model: str,
        timeout_s: float,
        max_tries: int,
        backoff_s: float,
        backoff_max_s: float,
        retry_after_max_s: float = 30.0,
        max_concurrency: int,
        requests_per_minute: int,
        shared_budget: tuple[str, int] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model
        self.max_tries = max(1, max_tries)
        self.backoff_s, self.backoff_max_s = backoff_s, backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.sleep = sleep
        self.max_concurrency = max_concurrency
        self.slots = threading.BoundedSemaphore(max_concurrency)
        self._threads: tuple[int, ThreadPoolExecutor] | None = None
        self._threads_lock = threading.Lock()
        self.limiter: RateLimiter | SharedRateLimiter = RateLimiter(requests_per_minute)
        if shared_budget is not None:  # (Redis URL, requests a minute): one budget for every process
            url, per_minute = shared_budget
            self.limiter = SharedRateLimiter(url, budget_key(api_key), per_minute, fallback=self.limiter)
        self.client = TypeSafeClient(
            api_key=api_key,
            base_url=base_url,
            model=model,
            timeout=timeout_s,
            retry=RetryPolicy(max_retries=0),
            compression=False,
        )

    def ask(
        self,
        state: Mapping,
        questions: Mapping[str, Noul],
        *,
        tries: int | None = None,
        timeout_s: float | None = None,
    ) -> JevReply:
        """One System One request, retried as the module docstring says; `tries` and `timeout_s`
        bound a request someone waits on (a memory's instruction vote inside the agent's request):
        one deadline for the wait for a slot, for a place in the rate limit and for the answer."""
        started = time.monotonic()
        tries = min(tries or self.max_tries, self.max_tries)

        def left() -> float | None:
            return None if timeout_s is None else max(0.0, started + timeout_s - time.monotonic())

        for attempt in range(1, tries + 1):
            try:
                with self._slot(left(), attempt):
                    if not self.limiter.acquire(left()):
                        raise JevError(f"Jev's rate limit leaves no room within {timeout_s} s", tries=attempt)
                    response = self.client.system_one(
                        state=dict(state),
                        questions=dict(questions),
                        **({} if timeout_s is None else {"timeout": max(left(), 0.05)}),
                    )
            except TypeSafeAPIResponseValidationError as exc:
                raise JevError(f"Jev sent a malformed response: {exc}", tries=attempt) from exc
            except (TypeSafeAPIConnectionError, TypeSafeAPIError) as exc:
                if not _transient(exc) or attempt == tries:
                    raise JevError(_describe(exc, attempt), tries=attempt) from exc
                self.sleep(self._delay(exc, attempt))
                continue
            votes = {name: float(answer.noul) for name, answer in response.nouls.items()}
            missing = sorted(set(questions) - set(votes))
            if missing:  # the SDK drops answers it cannot type; a partial reply is no reply
                raise JevError(
                    f"Jev sent a malformed response: no yes/no answer for {', '.join(missing[:5])}",
                    tries=attempt,
                )
            return JevReply(
                votes=votes,
                model=response.model,
                input_tokens=response.usage.input_tokens or 0,
                latency_ms=round((time.monotonic() - started) * 1000),
                tries=attempt,
                standin=response.raw_http_response.headers.get(STANDIN_HEADER) == "true",
            )
        raise AssertionError("unreachable")  # the loop returns or raises

    def submit(self, state: Mapping, questions: Mapping[str, Noul]) -> Future:
        """`ask` on one of the process's request threads, for a caller with many requests in flight.
        The threads are made once a process and kept, where each event used to start and end its
        own six: that cost the worker CPU on every event, and its first requests their start."""
        return self._request_threads().submit(self.ask, state, questions)

    def _request_threads(self) -> ThreadPoolExecutor:
        # Made where they are used: a pool process forked after the client was made has none of
        # its parent's threads, though the executor's copy would think it had.
        with self._threads_lock:
            if self._threads is None or self._threads[0] != os.getpid():
                pool = ThreadPoolExecutor(max_workers=max(1, self.max_concurrency), thread_name_prefix="jev")
                self._threads = (os.getpid(), pool)
            return self._threads[1]

    @contextmanager
    def _slot(self, timeout_s: float | None, attempt: int):
        """One of the process's concurrent requests; a bounded request waits no longer than its
        deadline for one, and fails instead, as a try that got no answer."""
        if not self.slots.acquire(timeout=timeout_s):
            raise JevError(f"Jev is busy: no free request slot within {timeout_s} s", tries=attempt)
        try:
            yield
        finally:
            self.slots.release()

    def _delay(self, exc: Exception, attempt: int) -> float:
        backoff = min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 1))
        if isinstance(exc, TypeSafeRateLimitError) and exc.retry_after_ms is not None:
            # Honoured, up to a cap: an assessment's lease must outlast its waits.
            return max(backoff, min(exc.retry_after_ms / 1000, self.retry_after_max_s))
        return backoff


def _transient(exc: Exception) -> bool:
    if isinstance(exc, TypeSafeAPIConnectionError):  # includes timeouts
        return True
    return getattr(exc, "status", None) in {408, 429} or 500 <= (getattr(exc, "status", 0) or 0) < 600


def _describe(exc: Exception, attempt: int) -> str:
    status = getattr(exc, "status", None)
    what = f"HTTP {status}" if status else type(exc).__name__
    return f"Jev failed after {attempt} tr{'y' if attempt == 1 else 'ies'}: {what}: {exc}"


def noul(question_id: str, instructions: str, yes: str, no: str) -> Noul:
    criteria = {"true": f"Yes, e.g. {yes}", "false": f"No, e.g. {no}"} if yes and no else None
    return Noul(instructions=instructions, criteria=criteria)


def uses_standin() -> bool:
    return not settings.TYPESAFE_API_KEY


@cache
def get_jev() -> Jev:
    """One client per process: its connection pool, concurrency cap and rate limit are shared."""
    standin = uses_standin()
    return Jev(
        api_key=settings.TYPESAFE_API_KEY or "offline-standin",
        base_url=settings.JEV_STANDIN_URL if standin else settings.TYPESAFE_BASE_URL,
        model=settings.JEV_MODEL,
        timeout_s=settings.JEV_TIMEOUT_S,
        max_tries=settings.JEV_MAX_TRIES,
        backoff_s=settings.JEV_BACKOFF_S,
        backoff_max_s=settings.JEV_BACKOFF_MAX_S,
        retry_after_max_s=settings.JEV_RETRY_AFTER_MAX_S,
        max_concurrency=settings.JEV_MAX_CONCURRENCY,
        requests_per_minute=settings.JEV_REQUESTS_PER_MINUTE,
        shared_budget=(
            (settings.REDIS_URL, settings.JEV_SHARED_REQUESTS_PER_MINUTE)
            if settings.JEV_SHARED_REQUESTS_PER_MINUTE > 0
            else None
        ),
    )


@receiver(setting_changed)
def _forget_client(*, setting: str, **kwargs) -> None:
    """The process's client is made from the settings once (`get_jev`): one changed under it
    (override_settings, a test's `settings`) reaches the next call, not a client made before."""
    if setting.startswith(("JEV_", "TYPESAFE_")) or setting == "REDIS_URL":
        get_jev.cache_clear()
