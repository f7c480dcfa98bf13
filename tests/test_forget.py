"""Forgetting a memory erases its content and keeps the row, its links and its audit trail."""

import pytest

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, IllegalTransition, transition
from memory_review.memories.models import Memory, content_hash
from memory_review.memories.services import ERASED, memory_forget
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

SECRET = "cust-3309's door code is 4471 and she is away until June."


def test_forgetting_erases_the_content_and_keeps_an_audited_row(acme):
    memory = make_memory(acme, subject="door code", content=SECRET)

    memory_forget(memory=memory, actor=Actor("user", "2"), reason="customer asked", seen_version=1)

    stored = Memory.objects.get(pk=memory.pk)
    assert (stored.status, stored.content) == ("deleted", ERASED)
    assert stored.content_hash != content_hash(SECRET)
    assert stored.deleted_at is not None
    move = Transition.objects.get(memory=memory)
    assert (move.action, move.to_status) == ("forget", "deleted")
    assert SECRET not in move.reason
    assert verification.problem_in(acme) is None


def test_a_forgotten_memory_cannot_be_restored(acme):
    memory = make_memory(acme, content=SECRET)
    memory_forget(memory=memory, actor=Actor("user", "2"), reason="customer asked", seen_version=1)

    with pytest.raises(IllegalTransition):
        transition(obj=memory, action="restore", actor=Actor("user", "2"), reason="oops", seen_version=2)
