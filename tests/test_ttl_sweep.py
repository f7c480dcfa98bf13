"""The hard-TTL sweep: past valid_until, active memories and memories in review expire without
waiting for an event; frozen ones stay pinned; each expiry is an audited transition."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.expiry import expire_past_ttl
from memory_review.memories.models import Memory
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


def status(memory: Memory) -> str:
    return Memory.objects.values_list("status", flat=True).get(pk=memory.pk)


def moved(memory: Memory, kind: str, action: str) -> None:
    transition(
        obj=memory, action=action, actor=Actor(kind, "7" if kind == "user" else "t"), reason="setup",
        seen_version=memory.row_version,
    )  # fmt: skip


def test_memories_past_their_ttl_expire_without_an_event(acme, globex):
    soon = timezone.now() + timedelta(hours=1)
    active = make_memory(acme, valid_until=soon)
    in_review = make_memory(acme, valid_until=soon)
    moved(in_review, "policy", "flag")
    frozen = make_memory(acme, valid_until=soon)
    moved(frozen, "user", "freeze")
    later = make_memory(acme, valid_until=soon + timedelta(days=1))
    forever = make_memory(acme)
    other_tenant = make_memory(globex, valid_until=soon)

    with time_machine.travel(soon + timedelta(seconds=1)):
        count = expire_past_ttl()

    assert count == 3
    assert [status(m) for m in (active, in_review, other_tenant)] == ["expired"] * 3
    assert [status(m) for m in (frozen, later, forever)] == ["frozen", "active", "active"]
    sweep = Transition.objects.get(memory=in_review, action="expire")
    assert sweep.actor == "system:ttl-sweep" and sweep.from_status == "needs_review"
    assert sweep.reason.startswith("hard TTL passed (valid until ") and "scheduled sweep" in sweep.reason
    assert verification.problem_in(acme) is None and verification.problem_in(globex) is None


def test_a_second_run_finds_nothing_to_do(acme):
    soon = timezone.now() + timedelta(minutes=5)
    make_memory(acme, valid_until=soon)

    with time_machine.travel(soon + timedelta(seconds=1)):
        assert expire_past_ttl() == 1
        assert expire_past_ttl() == 0
    assert Transition.objects.filter(action="expire").count() == 1


def test_nothing_expires_before_its_time(acme):
    make_memory(acme, valid_until=timezone.now() + timedelta(minutes=5))

    assert expire_past_ttl() == 0
