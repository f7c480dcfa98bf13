"""The one transition function: every allowed and every refused move (DESIGN §3)."""

import itertools

import pytest

from memory_review.audit.models import Transition
from memory_review.lifecycle import (
    ACTOR_KINDS,
    Actor,
    IllegalTransition,
    LifecycleError,
    StaleVersion,
    transition,
)
from memory_review.memories.models import Memory, MemoryStatus, SourceEvent
from memory_review.memories.moves import MEMORY_MOVES
from tests.factories import make_memory, memory_in

ACTIONS = sorted({action for _, action in MEMORY_MOVES})
CASES = list(itertools.product(ACTOR_KINDS, ACTIONS, MemoryStatus.values))
ALLOWED = [
    (kind, action, status)
    for kind, action, status in CASES
    if (kind, action) in MEMORY_MOVES and status in MEMORY_MOVES[(kind, action)][0]
]
REFUSED = [case for case in CASES if case not in ALLOWED]


def actor(kind: str) -> Actor:
    return Actor(kind, {"user": "7", "policy": "v1", "system": "ttl-sweep"}[kind])


@pytest.mark.django_db
@pytest.mark.parametrize("kind,action,status", ALLOWED)
def test_it_performs_each_allowed_move_and_audits_it(acme, kind, action, status):
    memory = memory_in(acme, status)
    before = Transition.objects.count()

    audit = transition(
        obj=memory, action=action, actor=actor(kind), reason="because", seen_version=memory.row_version
    )

    target = MEMORY_MOVES[(kind, action)][1]
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.status == target
    assert Transition.objects.count() == before + 1
    assert (audit.from_status, audit.to_status, audit.action, audit.actor) == (
        status,
        target,
        action,
        str(actor(kind)),
    )
    assert audit.row_version == stored.row_version


@pytest.mark.django_db
@pytest.mark.parametrize("kind,action,status", REFUSED)
def test_it_refuses_each_move_the_table_does_not_allow_and_writes_nothing(acme, kind, action, status):
    memory = memory_in(acme, status)
    before = (Transition.objects.count(), memory.row_version)

    with pytest.raises(IllegalTransition):
        transition(
            obj=memory, action=action, actor=actor(kind), reason="because", seen_version=memory.row_version
        )

    stored = Memory.objects.get(pk=memory.pk)
    assert stored.status == status
    assert (Transition.objects.count(), stored.row_version) == before


@pytest.mark.django_db
def test_the_policy_never_moves_a_frozen_memory(acme):
    memory = memory_in(acme, "frozen")
    for action in ("flag", "confirm", "contradict", "supersede"):
        with pytest.raises(IllegalTransition):
            transition(
                obj=memory,
                action=action,
                actor=actor("policy"),
                reason="vote",
                seen_version=memory.row_version,
            )
    assert Memory.objects.get(pk=memory.pk).status == "frozen"


@pytest.mark.django_db
def test_only_a_person_may_restore_the_dead(acme):
    for status in ("contradicted", "superseded", "expired"):
        memory = memory_in(acme, status)
        for kind in ("policy", "system"):
            with pytest.raises(IllegalTransition):
                transition(
                    obj=memory,
                    action="restore",
                    actor=actor(kind),
                    reason="r",
                    seen_version=memory.row_version,
                )
        transition(
            obj=memory, action="restore", actor=actor("user"), reason="r", seen_version=memory.row_version
        )
        assert Memory.objects.get(pk=memory.pk).status == "active"


@pytest.mark.django_db
def test_it_refuses_a_stale_version_and_writes_nothing(acme):
    memory = make_memory(acme)
    seen = memory.row_version
    transition(obj=memory, action="flag", actor=actor("policy"), reason="uncertain", seen_version=seen)
    count = Transition.objects.count()

    with pytest.raises(StaleVersion, match="changed since you saw it"):
        transition(obj=memory, action="freeze", actor=actor("user"), reason="hold", seen_version=seen)

    stored = Memory.objects.get(pk=memory.pk)
    assert stored.status == "needs_review"
    assert stored.row_version == seen + 1
    assert Transition.objects.count() == count


@pytest.mark.django_db
def test_refusals_read_in_names_and_words_not_ids_and_codes(acme):
    """The screens show a refusal as it is (the review flow, bulk, the API): the memory by its
    subject, statuses and actions in words (issue 15)."""
    import re

    memory = make_memory(acme, subject="return window")
    seen = memory.row_version
    transition(obj=memory, action="flag", actor=actor("policy"), reason="uncertain", seen_version=seen)
    refusals = []
    for action, version in (("freeze", seen), ("unfreeze", memory.row_version)):
        with pytest.raises(LifecycleError) as refused:
            transition(obj=memory, action=action, actor=actor("user"), reason="r", seen_version=version)
        refusals.append(str(refused.value))
    assert refusals[0] == (
        "“return window” changed since you saw it (1 change since); its status is now needs review"
    )
    assert refusals[1] == "cannot unfreeze “return window”: its status is needs review"
    for said in refusals:
        assert not re.search(rf"memory {memory.pk}\b|needs_review|version", said), said


@pytest.mark.django_db
def test_it_refuses_a_move_without_a_reason(acme):
    memory = make_memory(acme)
    with pytest.raises(LifecycleError, match="needs a reason"):
        transition(
            obj=memory, action="freeze", actor=actor("user"), reason="  ", seen_version=memory.row_version
        )
    assert Transition.objects.count() == 0


@pytest.mark.django_db
def test_restoring_a_memory_whose_subject_is_live_again_is_a_clear_error(acme):
    old = make_memory(acme, subject="delivery-window")
    transition(
        obj=old, action="contradict", actor=actor("policy"), reason="moved", seen_version=old.row_version
    )
    make_memory(acme, subject="delivery-window")
    count = Transition.objects.count()

    with pytest.raises(LifecycleError, match="another live memory already holds subject 'delivery-window'"):
        transition(
            obj=old, action="restore", actor=actor("user"), reason="was right", seen_version=old.row_version
        )

    assert Memory.objects.get(pk=old.pk).status == "contradicted"
    assert Transition.objects.count() == count


def test_actors_are_named_by_kind():
    assert str(Actor.policy("v3")) == "policy:v3"
    assert str(Actor.system("ttl-sweep")) == "system:ttl-sweep"
    with pytest.raises(ValueError, match="unknown actor kind"):
        Actor("model", "jev")


def test_a_row_of_no_lifecycle_is_refused_by_name():
    """The lifecycle moves only what a package gave it a Kind for (memories/moves.py)."""
    with pytest.raises(TypeError, match="SourceEvent has no lifecycle"):
        transition(obj=SourceEvent(), action="flag", actor=actor("user"), reason="x", seen_version=1)


def test_each_kind_of_row_has_its_owners_moves_and_no_other():
    """The lifecycle moves memories and proposed memories, each by its own package's table
    (memories/moves.py, assessments/moves.py); a second lifecycle for either is refused."""
    from memory_review import lifecycle
    from memory_review.assessments.models import PromotionCandidate
    from memory_review.assessments.moves import CANDIDATE_MOVES

    assert {model.__name__ for model in lifecycle._KINDS} == {"Memory", "PromotionCandidate"}
    assert lifecycle.kind_of(Memory()).moves is MEMORY_MOVES
    assert lifecycle.kind_of(PromotionCandidate()).moves is CANDIDATE_MOVES
    with pytest.raises(ValueError, match="Memory already has a lifecycle"):
        lifecycle.register(Memory, lifecycle.Kind(noun="x", moves={}, audit_field="memory", hash_field="x"))
    assert lifecycle.kind_of(Memory()).moves is MEMORY_MOVES
