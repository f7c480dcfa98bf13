"""Reassessment on change (issue 9, item 7): a guideline that no longer holds sends what rests on
it back to Jev (the real SDK against the stand-in) or to a person; an adopted policy decides
again, from stored votes, the memories it would decide otherwise. Each says why it ran."""

import pytest

from memory_review.assessments import reassessment
from memory_review.assessments.invalidation import run_invalidation
from memory_review.assessments.models import PolicyVersion, Verdict
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, MemoryLink
from memory_review.memories.services import event_record, link_create, memory_write
from tests.factories import flagged, make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def guideline(acme, policy, lead):
    """A returns policy with two memories resting on it, one unrelated memory beside them; then
    the policy is superseded by a person."""
    event = event_record(tenant=acme, source="policy", text="Returns policy v7: 30 days from delivery.")
    rule = memory_write(
        event=event, kind="policy", subject="return window", content="Returns: 30 days from delivery.",
        written_by="job:policy-sync",
    )  # fmt: skip
    same_source = memory_write(
        event=event, kind="fact", subject="refund approval", content="Late refunds need a lead's approval.",
        written_by="job:policy-sync",
    )  # fmt: skip
    supported = make_memory(acme, subject="Dana's late refund", content="Dana's refund is inside the window.")
    link_create(src=rule, dst=supported, kind=MemoryLink.Kind.SUPPORTS, origin=MemoryLink.Origin.EXPLICIT)
    unrelated = make_memory(acme, subject="carrier", content="Spain ships with SEUR.")
    newer = event_record(tenant=acme, source="policy", text="Returns policy v8: 14 days from delivery.")
    memory_write(
        event=newer, kind="policy", subject="return window", content="Returns: 14 days from delivery.",
        written_by="job:policy-sync", supersedes=rule, actor=Actor.user(lead), reason="v8 replaces v7",
    )  # fmt: skip
    rule.refresh_from_db()
    return rule, {same_source.pk, supported.pk}, unrelated


def test_what_rests_on_a_changed_guideline_is_listed(guideline):
    rule, resting, unrelated = guideline
    assert rule.status == "superseded" and reassessment.worth_reassessing(rule)
    assert {m.pk for m in reassessment.dependents(rule)} == resting
    assert unrelated.pk not in resting


def test_reassessment_judges_only_the_dependents_against_what_changed_and_says_why(guideline, lead, jev):
    rule, resting, unrelated = guideline
    queued = reassessment.reassess(rule, actor=Actor.user(lead), enqueue=lambda a: None)
    assert set(queued.targets) == resting
    assert "now superseded, and 2 live memories rest on it" in queued.reason
    assert rule.subject not in queued.reason  # cited by id: an erasure cannot reach this text
    assert queued.event.source == "policy" and "It now says: Returns: 14 days" in queued.event.text

    done = run_invalidation(queued.pk, jev=jev)
    assert done.state == "done" and done.candidates_total == 2
    judged = set(Verdict.objects.filter(assessment=done).values_list("memory_id", flat=True))
    assert judged == resting  # not the unrelated memory, though the event's scope covers it


def test_nothing_resting_on_it_is_refused(acme, policy, lead):
    lonely = make_memory(acme, kind="policy", subject="dress code")
    transition(obj=lonely, action="contradict", actor=Actor.user(lead), reason="gone", seen_version=1)
    with pytest.raises(reassessment.ReassessmentError, match="nothing live rests"):
        reassessment.reassess(Memory.objects.get(pk=lonely.pk), actor=Actor.user(lead), enqueue=print)


def test_send_to_review_flags_each_active_dependent_with_the_reason(guideline, lead):
    rule, resting, _ = guideline
    assert reassessment.send_to_review(rule, actor=Actor.user(lead)) == 2
    for pk in resting:
        move = Transition.objects.filter(memory_id=pk).latest("seq")
        assert move.to_status == "needs_review" and f"rests on memory {rule.pk}" in move.reason
        assert rule.subject not in move.reason  # audit rows cannot be erased; subjects can
    assert reassessment.send_to_review(rule, actor=Actor.user(lead)) == 0  # already in review


def test_an_adopted_policy_decides_again_from_stored_votes(acme, policy, lead):
    waiting = flagged(acme, policy, still_true=0.5)  # uncertain under v1: in review
    settled = flagged(acme, policy, still_true=0.9, disposition="confirmed")
    PolicyVersion.objects.filter(pk=policy.pk).update(mode="retired")
    wider = PolicyVersion.objects.create(
        tenant=acme, number=2, mode="active", created_by="test",
        thresholds={**policy.thresholds, "confirm_min": 0.45, "contradict_max": 0.3},
    )  # fmt: skip
    changes = reassessment.redecided(acme, wider)
    assert [(v.memory_id, now) for v, now in changes] == [(waiting.pk, "confirmed")]
    count, first = reassessment.redecided_count(acme, wider)  # the policies page's, streamed
    assert (count, [(v.memory_id, now) for v, now in first]) == (1, [(waiting.pk, "confirmed")])

    done = reassessment.redecide(acme, wider, actor=Actor.user(lead))
    assert done.state == "done" and done.model_name == reassessment.REPLAYED and done.requests == 0
    assert "Policy v2 was adopted" in done.reason and "no Jev call" in done.reason
    (verdict,) = done.verdicts.all()
    assert (verdict.memory_id, verdict.disposition, verdict.still_true, verdict.applied) == (
        waiting.pk, "confirmed", 0.5, True
    )  # fmt: skip
    waiting.refresh_from_db()
    assert waiting.status == "active"
    assert Transition.objects.filter(memory=waiting).latest("seq").actor == "policy:v2"
    assert Memory.objects.get(pk=settled.pk).row_version == settled.row_version
    with pytest.raises(reassessment.ReassessmentError, match="as before"):
        reassessment.redecide(acme, wider, actor=Actor.user(lead))


def test_the_screens_list_queue_and_explain(client, guideline, lead, labeler):
    rule, resting, _ = guideline
    client.force_login(labeler)
    assert client.post(f"/t/acme/memories/{rule.pk}/reassess/").status_code == 403
    client.force_login(lead)
    assert "What rests on it: 2 live memories" in client.get(f"/t/acme/memories/{rule.pk}/").content.decode()
    with pytest.MonkeyPatch.context() as patch:  # past the count's bound, said as more than it
        patch.setattr(reassessment, "DEPENDENTS_COUNTED_UP_TO", 1)
        page = client.get(f"/t/acme/memories/{rule.pk}/").content.decode()
        assert "What rests on it: more than 1 live memory" in page
    response = client.post(f"/t/acme/memories/{rule.pk}/reassess/", {"how": "reassess"})
    page = client.get(response["Location"]).content.decode()
    assert "Why it ran:" in page and "2 live memories rest on it" in page


def adopt_wider(acme, policy, **changes) -> PolicyVersion:
    PolicyVersion.objects.filter(pk=policy.pk).update(mode="retired")
    return PolicyVersion.objects.create(
        tenant=acme, number=2, mode="active", created_by="test",
        thresholds={**policy.thresholds, "margin": 0.0, "contradict_max": 0.45, **changes},
    )  # fmt: skip


def test_deciding_again_never_undoes_what_a_person_decided_since_the_vote(acme, policy, lead):
    memory = flagged(acme, policy, still_true=0.40)  # uncertain under v1: sent to review
    transition(obj=memory, action="approve", actor=Actor.user(lead), reason="checked", seen_version=2)
    wider = adopt_wider(acme, policy)  # 0.40 would now contradict
    done = reassessment.redecide(acme, wider, actor=Actor.user(lead))
    (verdict,) = done.verdicts.all()
    assert (verdict.disposition, verdict.applied) == ("contradicted", False)
    assert Memory.objects.get(pk=memory.pk).status == "active"  # the reviewer's approval stands


def test_votes_from_a_review_only_source_are_not_decided_again(acme, policy, lead):
    flagged(acme, policy, still_true=0.40)  # its event's source is chat
    wider = adopt_wider(acme, policy, review_only_sources=["chat"])
    assert reassessment.redecided(acme, wider) == []


def test_replayed_copies_are_neither_labeled_nor_replayed_as_votes_of_their_own(acme, policy, lead, labeler):
    from memory_review.assessments.policy import DEFAULTS
    from memory_review.calibration import labeling
    from memory_review.calibration.labeling import ItemRef
    from memory_review.calibration.stored import replay_stored

    memory = flagged(acme, policy, still_true=0.40)
    original = Verdict.objects.get(memory=memory)
    reassessment.redecide(acme, adopt_wider(acme, policy), actor=Actor.user(lead))
    assert Verdict.objects.filter(memory=memory).count() == 2
    assert list(labeling.items(acme, "verdict").values_list("pk", flat=True)) == [original.pk]
    assert replay_stored(acme, active=DEFAULTS, candidate=DEFAULTS).verdicts == 1
    assert labeling.next_item(acme, labeler, "verdict", policy=DEFAULTS) == ItemRef("verdict", original.pk)


def test_the_redecided_count_counts_every_change_and_lists_only_the_first(acme, policy):
    for _ in range(3):
        flagged(acme, policy, still_true=0.5)
    PolicyVersion.objects.filter(pk=policy.pk).update(mode="retired")
    wider = PolicyVersion.objects.create(
        tenant=acme, number=2, mode="active", created_by="test",
        thresholds={**policy.thresholds, "confirm_min": 0.45, "contradict_max": 0.3},
    )  # fmt: skip

    count, first = reassessment.redecided_count(acme, wider, first=2)

    assert count == 3 == len(reassessment.redecided(acme, wider))
    assert len(first) == 2 and all(now == "confirmed" for _, now in first)
