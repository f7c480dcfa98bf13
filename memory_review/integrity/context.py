"""Who is writing, for the seals' ledger: the request's user, the agent's token, or the job.

Set by the request middleware (lazily: the user or the API token is read only when a sealed row
is written, ops/middleware.py) and Celery's task hooks (memory_review/celery.py); anything else
(a management command, a shell) writes as `system`. A Transition names its actor itself; this is
for every other sealed write.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token

_actor: ContextVar[str | Callable[[], str] | None] = ContextVar("audit_actor", default=None)


def current_actor() -> str:
    actor = _actor.get()
    if callable(actor):
        actor = actor()
    return (actor or "system")[:120]


@contextmanager
def acting_as(actor: str | Callable[[], str]) -> Iterator[None]:
    token = begin(actor)
    try:
        yield
    finally:
        end(token)


def begin(actor: str | Callable[[], str]) -> Token:
    """For hooks that start and end in two calls (Celery's task signals); else `acting_as`."""
    return _actor.set(actor)


def end(token: Token) -> None:
    _actor.reset(token)
