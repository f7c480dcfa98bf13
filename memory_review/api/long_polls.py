"""How many long polls (GET changes with `wait`) may be open at once. Each holds a web thread
for up to its wait: about 20 from one token left gunicorn as shipped (3 processes x 8 threads)
nothing for people's pages. So at most API_LONG_POLLS_PER_TOKEN open per token, counted in the
shared cache (every process sees them), and at most API_LONG_POLLS_PER_PROCESS in one process,
which leaves the rest of its threads to pages. Past either: 429 naming the limit, with
Retry-After. A slot is a cache key that lapses after its poll's wait, so a process that died
holding one frees it."""

import logging
import threading
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5  # an open poll ends within its wait; a retry storm would cost the pages too
_open_here = 0  # long polls open in this process
_counting = threading.Lock()


class TooMany(Exception):
    """The poll would pass a limit; `setting` names it, the message says what to do."""

    def __init__(self, setting: str, message: str):
        super().__init__(message)
        self.setting = setting


def _take_token_slot(token_prefix: str, wait: float) -> str | None:
    """The key of the slot taken; None when all are taken. The cache being down lets it through."""
    for n in range(settings.API_LONG_POLLS_PER_TOKEN):
        key = f"api-long-poll:{token_prefix}:{n}"
        try:
            if cache.add(key, 1, timeout=int(wait) + 10):
                return key
        except Exception:  # do not refuse agents for it, but say so
            log.warning("long polls per token not counted: the cache is unreachable", exc_info=True)
            return ""
    return None


@contextmanager
def slot(token_prefix: str, wait: float):
    """Hold a long poll's place for its duration; TooMany when there is none. A read that does not
    wait needs none."""
    if wait <= 0:
        yield
        return
    per_token = settings.API_LONG_POLLS_PER_TOKEN
    key = _take_token_slot(token_prefix, wait)
    if key is None:
        raise TooMany(
            "API_LONG_POLLS_PER_TOKEN",
            f"too many long polls: at most {per_token} open at once per token; "
            "ask again when one ends, or without wait",
        )
    try:
        with _process_slot():
            yield
    finally:
        if key:
            cache.delete(key)


@contextmanager
def _process_slot():
    global _open_here
    most = settings.API_LONG_POLLS_PER_PROCESS
    with _counting:
        if _open_here >= most:
            raise TooMany(
                "API_LONG_POLLS_PER_PROCESS",
                f"too many long polls: this server holds at most {most} open at once; "
                "ask again shortly, or without wait",
            )
        _open_here += 1
    try:
        yield
    finally:
        with _counting:
            _open_here -= 1
