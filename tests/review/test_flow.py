"""The review flow: one item at a time in the queue's order, claimed on arrival and released on
skip; one key decides and the next item comes; `u` undoes the last decision as an audited move
of its own, refused when someone acted on the memory since. A decision names the item, version
and reviewer the flow showed, at least READ_FLOOR_MS before: anything else is refused."""

from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.utils import timezone

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.workflow import claims, flow
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


def shown_token(page) -> str:
    return page.content.decode().split('name="shown" value="', 1)[1].split('"', 1)[0]


def decide(client, memory, key: str, **extra):
    """What the flow's form posts for `memory`, as shown to the logged-in reviewer a second ago."""
    memory.refresh_from_db()
    reviewer = get_user_model().objects.get(pk=client.session["_auth_user_id"])
    ago = timezone.now() - timedelta(seconds=1)
    data = {
        "key": key,
        "shown": flow.shown(memory, user=reviewer, now=ago),
        "seen_version": memory.row_version,
        "filters": "",
        **extra,
    }
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
    assert f"Approved “{order[0].subject}”. Next: “{order[1].subject}”." in answer.content.decode()
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
    page = client.get(FLOW, {"kind": "fact"})
    assert shown(page) == fact.subject
    form = {"key": "a", "shown": shown_token(page), "seen_version": fact.row_version, "filters": "kind=fact"}

    with time_machine.travel(timezone.now() + timedelta(seconds=2)):  # the reviewer reads it
        answer = client.post(f"/t/acme/review/flow/memories/{fact.pk}/decide/", form)

    assert answer.status_code == 302 and answer["Location"] == f"{FLOW}?kind=fact"
    assert "Nothing left to review matching these filters" in client.get(answer["Location"]).content.decode()


def test_the_answer_says_what_was_done_and_what_comes_next_outside_the_swapped_region(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)

    text = decide(client, order[0], "a").content.decode()

    flash = text.split('<div id="flash" hx-swap-oob="innerHTML">', 1)[1].split("</div>", 1)[0]
    assert f"Approved “{order[0].subject}”. Next: “{order[1].subject}”." in flash
    assert text.index('id="flash"') < text.index('id="flow"')  # its own element, not inside the swap
    assert '<h1 class="flow-title" tabindex="-1">' in text  # where keys.js puts the focus


def test_a_plain_post_that_does_not_name_the_item_shown_is_refused(client, lead, queue):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)

    answer = client.post(
        f"/t/acme/review/flow/memories/{order[0].pk}/decide/",
        {"key": "a", "seen_version": order[0].row_version, "filters": ""},
    )  # what a form sent without its `shown` field, htmx or not

    assert answer.status_code == 302 and answer["Location"] == f"{FLOW}?item={order[0].pk}"
    again = client.get(answer["Location"]).content.decode()
    assert f"Nothing was changed on “{order[0].subject}”: the form did not say which item it showed" in again
    assert shown(client.get(answer["Location"])) == order[0].subject
    assert Memory.objects.get(pk=order[0].pk).status == "needs_review"
    assert not Transition.objects.filter(memory=order[0], action="approve").exists()


@pytest.mark.parametrize(
    "whose, problem",
    [
        ("the next item", "the screen showed you another item, not this one"),
        ("a colleague", "the page that sent it was shown to someone else"),
    ],
)
def test_a_decision_on_anything_but_what_you_were_shown_is_refused(
    client, lead, reviewer, queue, whose, problem
):
    order = list(Memory.objects.needs_review().order_by("threshold_gap", "flagged_at", "id"))
    client.force_login(lead)
    client.get(FLOW)
    item, viewer = (order[1], lead) if whose == "the next item" else (order[0], reviewer)
    form = {
        "key": "f",
        "shown": flow.shown(item, user=viewer, now=timezone.now() - timedelta(seconds=5)),
        "seen_version": order[0].row_version,
        "filters": "",
    }

    answer = client.post(f"/t/acme/review/flow/memories/{order[0].pk}/decide/", form, **HTMX)

    assert f"Nothing was changed on “{order[0].subject}”: {problem}." in answer.content.decode()
    assert shown(answer) == order[0].subject  # shown again, to be read and decided
    assert Memory.objects.filter(status="needs_review").count() == 3


@pytest.mark.parametrize(
    "seen, problem",
    [
        ({}, "the form did not say which version you saw"),
        ({"seen_version": "1"}, "the screen showed version 2, the form says 1"),
    ],
)
def test_a_decision_must_name_the_version_shown(client, lead, queue, seen, problem):
    memory = queue[0]
    memory.row_version = 2  # what the form showed: the item at version 2
    client.force_login(lead)
    client.get(FLOW)
    Memory.objects.filter(pk=memory.pk).update(row_version=2)
    token = flow.shown(memory, user=lead, now=timezone.now() - timedelta(seconds=5))

    answer = client.post(
        f"/t/acme/review/flow/memories/{memory.pk}/decide/",
        {"key": "a", "shown": token, "filters": "", **seen},
        **HTMX,
    )

    assert problem in answer.content.decode()
    assert Memory.objects.get(pk=memory.pk).status == "needs_review"


def test_a_damaged_record_of_what_was_shown_is_refused(client, lead, queue):
    client.force_login(lead)
    page = client.get(FLOW)
    memory = Memory.objects.get(subject=shown(page))
    token = shown_token(page)
    forged = token.replace(token[-1], "A" if token[-1] != "A" else "B")

    with time_machine.travel(timezone.now() + timedelta(seconds=2)):
        answer = decide(client, memory, "a", shown=forged)

    assert "the record of what the page showed you is damaged" in answer.content.decode()
    assert Memory.objects.get(pk=memory.pk).status == "needs_review"


def test_a_decision_sooner_than_a_person_could_see_the_item_is_refused(client, lead, queue):
    """The second of a double press, sent the moment the next item arrived: refused, and the same
    item is shown again. Once it has been on screen READ_FLOOR_MS, the same key decides it."""
    client.force_login(lead)
    at = timezone.now()
    with time_machine.travel(at, tick=False):
        page = client.get(FLOW)
    memory = Memory.objects.get(subject=shown(page))
    form = {"key": "a", "shown": shown_token(page), "seen_version": memory.row_version, "filters": ""}
    url = f"/t/acme/review/flow/memories/{memory.pk}/decide/"

    with time_machine.travel(at + timedelta(milliseconds=60), tick=False):
        too_soon = client.post(url, form, **HTMX)
    assert (
        f"Nothing was changed on “{memory.subject}”: it had been on screen for 60 ms, less than the "
        f"{flow.READ_FLOOR_MS} ms a person takes to see it" in too_soon.content.decode()
    )
    assert shown(too_soon) == memory.subject
    assert Memory.objects.get(pk=memory.pk).status == "needs_review"

    with time_machine.travel(at + timedelta(milliseconds=flow.READ_FLOOR_MS), tick=False):
        client.post(url, form, **HTMX)
    assert Memory.objects.get(pk=memory.pk).status == "active"


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
