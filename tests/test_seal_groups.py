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
    ["a member's digest", "a member dropped", "a member added", "a member renamed"],
)
def test_a_groups_list_edited_is_named(acme, votes, edit):
    """Without the key the group's digest cannot follow its members: the group is named, not the
    votes it no longer vouches for."""
    group = group_of(votes[1])
    members = [list(member) for member in seals.members_of(group.members)]
    if edit == "a member's digest":
        members[0][1] = "0" * 64
    elif edit == "a member dropped":
        members.pop()
    elif edit == "a member added":
        members.append([votes[4] + 1000, "f" * 64])
    else:
        members[0][0] = votes[4] + 1000
    with around_the_application() as cursor:
        cursor.execute(
            "UPDATE audit_seal SET members = %s WHERE id = %s",
            [json.dumps(members, separators=(",", ":")), group.pk],
        )

    problem = str(verification.problem_in(acme))

    assert f"seal id {group.pk} (#{group.seq}), of verdicts written together, was edited" in problem
    assert not seals.unchanged(Verdict, votes[1])  # nor does the check made before acting trust it


def test_a_groups_digest_made_to_match_without_the_key_breaks_the_ledger(acme, votes):
    group = group_of(votes[1])
    members = seals.members_of(group.members)[:1]
    text = json.dumps([list(m) for m in members], separators=(",", ":"))
    forged = seals.group_digest("verdict", acme.pk, text, b"not the key" * 3)
    with around_the_application() as cursor:
        cursor.execute(
            "UPDATE audit_seal SET members = %s, digest = %s WHERE id = %s", [text, forged, group.pk]
        )

    problem = verification.problem_in(acme)

    assert problem is not None and problem.seq == group.seq
    assert "seal was edited or forged" in problem.problem


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
