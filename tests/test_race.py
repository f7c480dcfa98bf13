"""Races end in a clear conflict, not a silent overwrite (STYLE §5). PostgreSQL only: SQLite's
select_for_update() is a no-op and it has one writer at a time, so it cannot show a race."""

import threading

import pytest
from django.db import connection, connections

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, StaleVersion, transition
from memory_review.memories import tallies
from memory_review.memories.models import Memory
from tests.factories import make_memory

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: row locks are a no-op on SQLite (make test runs the PostgreSQL pass)",
)

RACES = 50


def race(memory: Memory, seen: int) -> list[str]:
    """Two threads, each on its own connection, move the same memory at the same moment."""
    barrier = threading.Barrier(2)
    outcomes: list[str] = []
    lock = threading.Lock()

    def contender(action: str, who: str) -> None:
        try:
            barrier.wait()
            transition(
                obj=Memory.objects.get(pk=memory.pk),
                action=action,
                actor=Actor("user", who),
                reason=f"user {who} wants to {action}",
                seen_version=seen,
            )
            result = "won"
        except StaleVersion:
            result = "conflict"
        finally:
            connections.close_all()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=contender, args=args) for args in (("freeze", "1"), ("flag", "2"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_exactly_one_of_two_simultaneous_reviewers_wins_every_race(acme):
    for _ in range(RACES):
        memory = make_memory(acme)
        outcomes = race(memory, memory.row_version)

        assert sorted(outcomes) == ["conflict", "won"]
        stored = Memory.objects.get(pk=memory.pk)
        assert stored.row_version == memory.row_version + 1
        assert Transition.objects.filter(memory=memory).count() == 1

    assert Transition.objects.for_tenant(acme).count() == RACES
    assert verification.problem_in(acme) is None
    kept = {status: n for status, n in tallies.counts(acme).items() if n}
    assert kept == tallies.counted(acme)  # the losers' moves left no trace in the counts either


@pytest.mark.django_db(transaction=True)
def test_opposite_moves_on_different_memories_at_once_never_deadlock(acme):
    """A flag (active -> needs_review) and an approval (needs_review -> active) touch the same
    two status counts from opposite ends: they must take them in one order."""
    memories = [make_memory(acme) for _ in range(12)]
    for memory in memories[::2]:
        transition(obj=memory, action="flag", actor=Actor.policy("v1"), reason="setup", seen_version=1)
    errors, lock = [], threading.Lock()

    def move(memory, action):
        try:
            transition(
                obj=memory,
                action=action,
                actor=Actor("user", "1"),
                reason="at once",
                seen_version=memory.row_version,
            )
        except Exception as exc:  # a deadlock surfaces as OperationalError
            with lock:
                errors.append(repr(exc))
        finally:
            connections.close_all()

    for _ in range(3):
        threads = [
            threading.Thread(target=move, args=(m, "approve" if m.status == "needs_review" else "flag"))
            for m in memories
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        for memory in memories:
            memory.refresh_from_db()

    assert errors == []
    kept = {status: n for status, n in tallies.counts(acme).items() if n}
    assert kept == tallies.counted(acme)
    assert verification.problem_in(acme) is None
