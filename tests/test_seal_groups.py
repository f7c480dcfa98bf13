"""Seals of many rows (integrity/seals.py `grouped`, issue 30): a write of many votes is sealed by
one ledger row naming each vote with its own digest. Verification reads each group's members
among the single seals, in object order, and holds every vote to its latest seal whichever kind
that is; a group whose list of votes was edited, a member edited, deleted or inserted, are each
named. Run on SQLite and on PostgreSQL."""

import json

import pytest

from memory_review.assessments.invalidation import VERDICT_COLUMNS
from memory_review.assessments.models import Verdict
from memory_review.audit import sequencer, verification
from memory_review.audit.models import Seal
from memory_review.integrity import seals
from memory_review.integrity.heads import ChainBroken
from tests.factories import around_the_application, make_memory
from tests.test_sealed_values import rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("orphans_allowed")]


@pytest.fixture(params=["inline", "deferred"])
def votes(request, acme, policy, settings):
    """Five votes written together (one group), then sealed changes that interleave with it: the
    first and third changed together, the second and fourth together (two groups whose members
    alternate), and the fifth changed alone (a single seal after its group)."""
    settings.AUDIT_SEQUENCER = request.param
    pks = Verdict.objects.insert_values(
        VERDICT_COLUMNS, rows(acme, policy, [make_memory(acme) for _ in range(5)])
    )
    Verdict.objects.filter(pk__in=[pks[0], pks[2]]).update(shadow_disposition="unrelated")
    Verdict.objects.filter(pk__in=[pks[1], pks[3]]).update(shadow_disposition="contradicted")
    last = Verdict.objects.get(pk=pks[4])
    last.applied = True
    last.save(update_fields=["applied"])
    sequencer.sequence(acme.pk)
    return pks


def group_of(pk: int) -> Seal:
    return Seal.objects.filter(kind="verdict", members__contains=f"[{pk},").order_by("-pk").first()


def test_votes_written_together_are_sealed_by_one_ledger_row(acme, votes):
    created = Seal.objects.get(kind="verdict", action="create")
    changes = Seal.objects.filter(kind="verdict", action="change").order_by("pk")

    assert [pk for pk, _ in seals.members_of(created.members)] == votes
    assert [[pk for pk, _ in seals.members_of(g.members)] for g in changes if g.members] == [
        [votes[0], votes[2]],
        [votes[1], votes[3]],
    ]
    assert [g.object_id for g in changes if not g.members] == [votes[4]]  # one row, one seal
    assert all(seals.unchanged(Verdict, pk) for pk in votes)
    assert verification.problem_in(acme) is None


@pytest.mark.parametrize("which", [0, 1, 2, 4])
def test_a_vote_edited_is_named_whichever_seal_is_its_latest(acme, votes, which):
    pk = votes[which]
    with around_the_application():
        Verdict._base_manager.filter(pk=pk).update(still_true=0.05)

    assert f"verdict {pk} was changed around the application: it no longer matches its seal" in str(
        verification.problem_in(acme)
    )
    assert not seals.unchanged(Verdict, pk)


@pytest.mark.parametrize("which", [1, 3])
def test_a_vote_deleted_is_named(acme, votes, which):
    pk = votes[which]
    with around_the_application() as cursor:
        cursor.execute("DELETE FROM assessments_verdict WHERE id = %s", [pk])

    assert f"verdict {pk} was deleted around the application (sealed at #" in str(
        verification.problem_in(acme)
    )


def test_a_vote_put_back_as_its_group_sealed_it_is_named(acme, votes):
    """The first vote's latest seal is its second group: the values the first group sealed, restored,
    differ from it."""
    with around_the_application():
        Verdict._base_manager.filter(pk=votes[0]).update(shadow_disposition=None)

    assert f"verdict {votes[0]} was changed around the application" in str(verification.problem_in(acme))


@pytest.mark.parametrize(
    "edit",
    ["a member's digest", "a member dropped", "a member added", "a member renamed", "the list cleared"],
)
def test_a_groups_list_edited_breaks_the_ledger_at_it(acme, votes, edit):
    """A group's members are in its ledger row's hash: without the key, no edit of them (even one
    that makes it read as a single seal) leaves the ledger intact, whatever its digest says."""
    group = group_of(votes[1])
    members = [list(member) for member in seals.members_of(group.members)]
    if edit == "a member's digest":
        members[0][1] = "0" * 64
    elif edit == "a member dropped":
        members.pop()
    elif edit == "a member added":
        members.append([votes[4] + 1000, "f" * 64])
    elif edit == "a member renamed":
        members[0][0] = votes[4] + 1000
    text = None if edit == "the list cleared" else json.dumps(members, separators=(",", ":"))
    forged = seals.group_digest("verdict", acme.pk, text or "", b"not the key" * 3)
    with around_the_application() as cursor:
        cursor.execute(
            "UPDATE audit_seal SET members = %s, digest = %s WHERE id = %s", [text, forged, group.pk]
        )

    problem = verification.problem_in(acme)

    assert problem is not None and problem.seq == group.seq
    assert "seal was edited or forged" in problem.problem
    if edit == "a member added":  # the check made before acting trusts no row of an edited group
        assert not seals.unchanged(Verdict, votes[1])


def test_a_group_edited_while_it_waits_is_named_and_never_linked(acme, policy, settings):
    settings.AUDIT_SEQUENCER = "deferred"
    pks = Verdict.objects.insert_values(
        VERDICT_COLUMNS, rows(acme, policy, [make_memory(acme) for _ in range(3)])
    )
    group = group_of(pks[0])
    with around_the_application() as cursor:
        cursor.execute(
            "UPDATE audit_seal SET members = %s WHERE id = %s", [group.members.replace(",", ", "), group.pk]
        )

    problem = verification.problem_in(acme)

    assert f"unsequenced seal id {group.pk} (verdict {pks[0]}) was edited or forged while it waited" in str(
        problem
    )
    with pytest.raises(ChainBroken, match=f"seal id {group.pk} changed while it waited"):
        sequencer.sequence(acme.pk)


def test_votes_deleted_through_the_application_are_sealed_not_flagged(acme, votes):
    Verdict.objects.filter(pk__in=votes[1:3]).delete()

    assert verification.problem_in(acme) is None


def test_a_vote_inserted_around_the_application_is_named(acme, votes):
    row = Verdict.objects.get(pk=votes[2])
    copy = {f.attname: getattr(row, f.attname) for f in Verdict._meta.concrete_fields if not f.primary_key}
    copy["event_id"] = make_memory(acme).source_event_id
    with around_the_application():
        (inserted,) = Verdict._base_manager.bulk_create([Verdict(**copy)])

    assert f"verdict {inserted.pk} has no seal: it was inserted around the application" in str(
        verification.problem_in(acme)
    )


def test_groups_stay_within_their_bound(acme, policy, settings, monkeypatch):
    """A write of more rows than GROUP_MOST is sealed in several groups, each in id order."""
    settings.AUDIT_SEQUENCER = "inline"
    monkeypatch.setattr(seals, "GROUP_MOST", 2)
    pks = Verdict.objects.insert_values(
        VERDICT_COLUMNS, rows(acme, policy, [make_memory(acme) for _ in range(5)])
    )

    groups = Seal.objects.filter(kind="verdict").order_by("pk")

    assert [[pk for pk, _ in seals.members_of(g.members)] for g in groups] == [pks[0:2], pks[2:4], pks[4:5]]
    assert verification.problem_in(acme) is None


def test_votes_sealed_one_by_one_before_groups_verify_beside_them(acme, policy, settings, monkeypatch):
    """The ledger before audit.0023 holds a row a vote: those and groups written after verify as one,
    and an edit to a vote sealed the old way is still named."""
    settings.AUDIT_SEQUENCER = "deferred"
    with monkeypatch.context() as before:
        before.setattr(Verdict, "seal_grouped", False)
        old = Verdict.objects.insert_values(
            VERDICT_COLUMNS, rows(acme, policy, [make_memory(acme) for _ in range(3)])
        )
    new = Verdict.objects.insert_values(
        VERDICT_COLUMNS, rows(acme, policy, [make_memory(acme) for _ in range(3)])
    )
    Verdict.objects.filter(pk__in=[old[1], new[1]]).update(applied=True)  # one group across both
    sequencer.sequence(acme.pk)

    assert (
        sorted(Seal.objects.filter(kind="verdict", members__isnull=True).values_list("object_id", flat=True))
        == old
    )
    assert verification.problem_in(acme) is None
    with around_the_application():
        Verdict._base_manager.filter(pk=old[2]).update(still_true=0.05)
    assert f"verdict {old[2]} was changed around the application" in str(verification.problem_in(acme))
