"""Work that follows a commit, asked for once however many writes of the transaction ask."""

from collections.abc import Callable
from functools import partial

from django.db import connections, transaction


def once_on_commit(key: tuple, callback: Callable[[], None], *, using: str = "default") -> None:
    """`callback` once the caller's transaction commits (at once outside one), unless a callback
    of the same `key` already waits for that commit: a transaction that writes a hundred rows asks
    for one sequencer run, one fan-out, not a hundred. The callbacks waiting on the connection are
    the record, so a rollback drops the request with the writes."""
    waiting = connections[using].run_on_commit
    if any(getattr(waiter, "once_key", None) == key for _, waiter, _ in waiting):
        return
    tagged = partial(callback)  # a function's attributes are its own, shared by every call
    tagged.once_key = key
    transaction.on_commit(tagged, using=using)
