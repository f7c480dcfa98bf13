"""The change feed (issue 16): every change to what is in force, in commit order, from a cursor
the agent keeps. The cursor is the feed position of the last change it has (memories/changes.py
says why positions follow commit order); 0 starts from the beginning."""

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Max

from memory_review.memories.models import MemoryChange
from memory_review.tenancy.models import Tenant

MAX_PAGE = 500
MAX_WAIT_SECONDS = 30
POLL_SECONDS = 0.2  # a long poll looks again this often: one indexed range read a time


class CursorAhead(ValueError):
    """A cursor beyond the feed's end: kept from another database, or made up."""


class NotAllowed(Exception):
    """The reader lost its right to the feed while its long poll waited (a token revoked)."""


@dataclass
class Page:
    changes: list[MemoryChange]
    cursor: int  # where to ask from next
    more: bool  # another page is ready now


def head(tenant: Tenant) -> int:
    return MemoryChange.objects.for_tenant(tenant).aggregate(last=Max("seq"))["last"] or 0


def read(
    tenant: Tenant,
    after: int,
    *,
    limit: int = 100,
    wait: float = 0,
    allowed: Callable[[], bool] | None = None,
) -> Page:
    """The changes after `after`, oldest first. With `wait`, hold the request until one arrives or
    `wait` seconds pass (a long poll); an empty page keeps the cursor where it was. `allowed` is
    asked after each look but the first (NotAllowed when it says no): asked after the look, a
    change it found was made while the caller was still allowed."""
    deadline = time.monotonic() + min(wait, MAX_WAIT_SECONDS)
    looked = False
    while True:
        found = list(
            MemoryChange.objects.for_tenant(tenant)
            .filter(seq__gt=after)
            .select_related("memory", "transition")
            .order_by("seq")[: limit + 1]
        )
        if looked and allowed is not None and not allowed():
            raise NotAllowed("no longer allowed to read the feed")
        if found or time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
        looked = True
    if not found and after > (end := head(tenant)):
        raise CursorAhead(f"is beyond the end of this tenant's feed ({end}); start again from 0")
    more = len(found) > limit
    found = found[:limit]
    return Page(changes=found, cursor=found[-1].seq if found else after, more=more)
