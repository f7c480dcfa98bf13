"""How fast one API token may call: API_RATE_PER_MINUTE requests in each clock minute, counted
in the shared cache (Redis), so every web process sees the same count. Over it: 429 with
Retry-After, the seconds until the next minute starts."""

import logging
import math
import time

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)


def wait_seconds(token_prefix: str, *, calls: int = 1) -> int | None:
    """None when `calls` more may go ahead; otherwise how long the caller should wait. Counted by
    the token's public prefix (random and unique), not its row id, which a re-created database
    reuses. A batch of events is charged one call an event."""
    limit = settings.API_RATE_PER_MINUTE
    if limit <= 0:
        return None
    now = time.time()
    minute = int(now // 60)
    key = f"api-rate:{token_prefix}:{minute}"
    try:
        cache.add(key, 0, timeout=90)
        count = cache.incr(key, calls)
    except ValueError:  # the key expired between add and incr: this is the minute's first call
        count = calls
    except Exception:  # the cache is down: do not refuse agents for it, but say so
        log.warning("API rate limit not applied: the cache is unreachable", exc_info=True)
        return None
    if count <= limit:
        return None
    return max(1, math.ceil((minute + 1) * 60 - now))
