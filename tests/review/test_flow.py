"""The review flow: one item at a time in the queue's order, claimed on arrival and released on
skip; one key decides and the next item comes; `u` undoes the last decision as an audited move
of its own, refused when someone acted on the memory since."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.workflow import claims
from memory_review.workflow.models import Claim
from tests.factories import flagged, make_user

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
FLOW = "/t/acme/review/flow/"


@pytest.fixture
def queue(acme, policy):
    """Three items in review; the queue orders them by how close their vote lies to the policy's
    edges (the tests read that order back rather than assume it)."""
    return [
        flagged(acme, policy, still_true=value, subject=subject)
        for value, subject in ((0.5, "refund window"), (0.45, "office address"), (0.40, "support hours"))
    ]


def shown(response) -> str:
    page = response.content.decode()
    return (
        page.split('class="flow-title"', 1)[1].split("</a>", 1)[0].rsplit(">", 1)[1]
        if "flow-title" in page
        else ""
    )


def decide(client, memory, key: str, **extra):
    memory.refresh_from_db()
    data = {"key": key, "seen_version": memory.row_version, "filters": "", **extra}
    return client.post(f"/t/acme/review/flow/memories/{memory.pk}/decide/", data, **HTMX)


def test_arriving_claims_the_first_item_in_the_queues_order(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)

    page = client.get(FLOW)

    assert page.status_code == 200 and shown(page) == order[0].subject
    assert Claim.objects.held().get().memory == order[0] and Claim.objects.get().holder == lead
    text = page.content.decode()
    assert "3</strong> left" in text and "Why it is here:" in text and "Confirm contradicted" in text


def test_an_item_a_colleague_holds_is_passed_over(client, lead, reviewer, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    claims.claim_take(memory=order[0], user=reviewer)
    client.force_login(lead)

    assert shown(client.get(FLOW)) == order[1].subject


def test_one_key_decides_and_the_next_item_comes_with_its_claim(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)

    answer = decide(client, order[0], "a", reason="checked with the customer")

    assert answer.status_code == 200 and shown(answer) == order[1].subject
    approved = Transition.objects.get(memory=order[0], action="approve")
    assert (approved.actor, approved.reason) == (f"user:{lead.pk}", "checked with the customer")
    assert "1</strong> done today" in answer.content.decode()
    assert Claim.objects.held().get().memory == order[1]
    assert verification.problem_in(order[0].tenant) is None


def test_skipping_releases_the_claim_and_the_item_is_not_offered_again(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)

    answer = decide(client, order[0], "s")

    assert shown(answer) == order[1].subject
    assert not Claim.objects.held().filter(memory=order[0]).exists()
    assert Memory.objects.get(pk=order[0].pk).status == "needs_review"
    assert shown(client.get(FLOW)) == order[1].subject  # not back on a reload


@pytest.mark.parametrize("replaces, action", [(0.8, "supersede"), (0.1, "contradict")])
def test_x_confirms_the_kill_the_vote_points_at(client, lead, acme, policy, replaces, action):
    memory = flagged(acme, policy, still_true=0.38)
    memory.verdicts.update(replaces=replaces)
    client.force_login(lead)
    client.get(FLOW)

    decide(client, memory, "x")

    assert Transition.objects.filter(memory=memory).latest("seq").action == action


def test_undo_takes_the_decision_back_as_a_move_of_its_own(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)
    decide(client, order[0], "f")

    answer = client.post("/t/acme/review/flow/undo/", {"filters": ""}, **HTMX)

    memory = Memory.objects.get(pk=order[0].pk)
    reopen = Transition.objects.filter(memory=memory).latest("seq")
    freeze = Transition.objects.get(memory=memory, action="freeze")
    assert memory.status == "needs_review" and memory.flagged_for == "uncertain"
    assert (reopen.action, reopen.actor) == ("reopen", f"user:{lead.pk}")
    assert reopen.reason.startswith(f"undid freeze (audit #{freeze.seq})")
    assert shown(answer) == memory.subject and "back in the queue" in answer.content.decode()
    assert verification.problem_in(memory.tenant) is None


def test_undo_is_refused_naming_who_acted_since(client, lead, reviewer, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    reviewer.first_name, reviewer.last_name = "Tomás", "Ortega"
    reviewer.save()
    client.force_login(lead)
    client.get(FLOW)
    decide(client, order[0], "a")
    memory = Memory.objects.get(pk=order[0].pk)
    transition(
        obj=memory,
        action="freeze",
        actor=Actor.user(reviewer),
        reason="hold",
        seen_version=memory.row_version,
    )

    answer = client.post("/t/acme/review/flow/undo/", {"filters": ""}, **HTMX)

    text = answer.content.decode()
    assert f"Not undone: Tomás Ortega acted on “{memory.subject}” since: freeze (active → frozen)" in text
    assert Memory.objects.get(pk=memory.pk).status == "frozen"


def test_undo_is_refused_once_its_window_has_passed(client, lead, queue, settings):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)
    decide(client, order[0], "a")

    with time_machine.travel(timezone.now() + timedelta(seconds=settings.REVIEW_UNDO_SECONDS + 5)):
        answer = client.post("/t/acme/review/flow/undo/", {"filters": ""}, **HTMX)

    assert f"undo lasts {settings.REVIEW_UNDO_SECONDS} s" in answer.content.decode()
    assert Memory.objects.get(pk=order[0].pk).status == "active"


def test_without_javascript_a_decision_redirects_to_the_flow_with_its_filters(client, lead, acme, policy):
    fact = flagged(acme, policy, still_true=0.5, kind="fact")
    flagged(acme, policy, still_true=0.5, kind="preference")
    client.force_login(lead)
    assert shown(client.get(FLOW, {"kind": "fact"})) == fact.subject

    answer = client.post(
        f"/t/acme/review/flow/memories/{fact.pk}/decide/",
        {"key": "a", "seen_version": fact.row_version, "filters": "kind=fact"},
    )

    assert answer.status_code == 302 and answer["Location"] == f"{FLOW}?kind=fact"
    assert "Nothing left to review matching these filters" in client.get(answer["Location"]).content.decode()


def test_a_stale_decision_changes_nothing_and_says_what_happened(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)
    data = {"key": "a", "seen_version": order[0].row_version - 1, "filters": ""}

    answer = client.post(f"/t/acme/review/flow/memories/{order[0].pk}/decide/", data, **HTMX)

    assert "Nothing was changed on “" in answer.content.decode()
    assert Memory.objects.get(pk=order[0].pk).status == "needs_review"


def test_progress_counts_what_you_did_today_and_your_pace(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)
    for memory in order[:2]:
        decide(client, memory, "a")

    text = client.get(FLOW).content.decode()

    assert "2</strong> done today" in text and "1</strong> left" in text and "an hour" in text


def test_auditors_and_labelers_cannot_use_it(client, acme, queue):
    for role in ("auditor", "labeler"):
        client.force_login(make_user(f"acme-{role}", acme, role))
        assert client.get(FLOW).status_code == 403
        assert decide(client, queue[0], "a").status_code == 403
    assert Memory.objects.filter(status="needs_review").count() == 3


def test_bad_filters_are_a_400_naming_them(client, lead, queue):
    client.force_login(lead)

    answer = client.get(FLOW, {"kind": "nonsense"})

    assert answer.status_code == 400 and "filters: kind" in answer.content.decode()
