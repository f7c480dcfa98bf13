"""The two-person rule: where a tenant keeps it, erasing a person's data and forgetting a memory
need a second lead or admin, within a day; every step is kept."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.audit.models import Transition
from memory_review.memories.models import DualControl, Erasure, Memory, SourceEvent
from memory_review.tenancy.models import Role, Tenant
from tests.factories import make_memory, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict(acme):
    Tenant.objects.filter(pk=acme.pk).update(two_person_rule=True)
    acme.refresh_from_db()
    return acme


@pytest.fixture
def admin(acme):
    return make_user("acme-admin", acme, Role.ADMIN)


def forget(client, memory, reason="she asked us to"):
    return client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {"action": "forget", "reason": reason, "seen_version": memory.row_version, "view": "page"},
        headers={"HX-Request": "true"},
    )


def test_forgetting_waits_for_a_second_lead_who_then_makes_it_happen(client, strict, reviewer, lead):
    memory = make_memory(strict, content="Her phone is +44 7700 900418.")
    client.force_login(reviewer)

    asked = forget(client, memory)

    assert "waits for a second lead or admin" in asked.content.decode()
    memory.refresh_from_db()
    assert memory.status == "active"
    request = DualControl.objects.get()
    client.force_login(lead)
    assert "Confirm forgetting" in client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    client.post(f"/t/acme/requests/{request.pk}/confirm/")

    memory.refresh_from_db()
    request.refresh_from_db()
    assert (memory.status, request.outcome, request.decided_by) == ("deleted", "confirmed", lead)
    reason = Transition.objects.filter(memory=memory).latest("seq").reason
    assert reason.startswith("she asked us to (asked by user") and f"request {request.pk}" in reason


def test_the_person_who_asked_cannot_confirm_and_a_reviewer_cannot_either(client, strict, reviewer, lead):
    memory = make_memory(strict)
    client.force_login(lead)
    forget(client, memory)
    request = DualControl.objects.get()

    client.post(f"/t/acme/requests/{request.pk}/confirm/")
    client.force_login(reviewer)
    assert client.post(f"/t/acme/requests/{request.pk}/confirm/").status_code == 403

    memory.refresh_from_db()
    assert memory.status == "active" and DualControl.objects.get().outcome is None


def test_a_request_lapses_after_a_day(client, strict, reviewer, lead):
    memory = make_memory(strict)
    client.force_login(reviewer)
    forget(client, memory)
    request = DualControl.objects.get()

    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        client.force_login(lead)  # a session lasts a working day: the lead logs in that morning
        response = client.post(f"/t/acme/requests/{request.pk}/confirm/")
        assert "lapsed" in client.get(response["Location"]).content.decode()

    memory.refresh_from_db()
    assert memory.status == "active"


def test_whoever_asked_may_cancel(client, strict, reviewer):
    memory = make_memory(strict)
    client.force_login(reviewer)
    forget(client, memory)
    request = DualControl.objects.get()

    client.post(f"/t/acme/requests/{request.pk}/cancel/")

    assert DualControl.objects.get().outcome == "cancelled"
    memory.refresh_from_db()
    assert memory.status == "active"


def test_without_the_rule_forgetting_happens_at_once(client, acme, reviewer):
    memory = make_memory(acme)
    client.force_login(reviewer)
    forget(client, memory)
    memory.refresh_from_db()
    assert memory.status == "deleted" and not DualControl.objects.exists()


def test_an_admin_asks_to_erase_a_person_typing_the_id_twice_and_a_lead_confirms(
    client, strict, admin, lead, auditor
):
    make_memory(strict, content="Dana's address is 4 Mill Lane.", user_id="cust-9")
    client.force_login(admin)

    mistyped = client.post(
        "/t/acme/erasures/request/", {"user_id": "cust-9", "confirm_user_id": "cust-8", "reason": "x"}
    )
    client.post(
        "/t/acme/erasures/request/", {"user_id": "cust-9", "confirm_user_id": "cust-9", "reason": "her email"}
    )

    assert mistyped.status_code == 400 and "the two user ids differ" in mistyped.content.decode()
    request = DualControl.objects.get(kind="erase")
    assert Memory.objects.get(user_id="cust-9").status == "active"
    client.force_login(lead)
    client.post(f"/t/acme/requests/{request.pk}/confirm/")

    erasure = Erasure.objects.get()
    assert erasure.confirmed_by == f"user:{lead.pk}" and erasure.requested_by == f"user:{admin.pk}"
    assert Memory.objects.get(user_id="cust-9").status == "deleted"
    client.force_login(auditor)
    page = client.get("/t/acme/erasures/").content.decode()
    assert "confirmed by" in page and "erase cust-9" in page  # both steps, on record
    assert erasure.proof_hash in page and 'action="/t/acme/erasures/request/"' not in page
    title = page.split("<title>", 1)[1].split("</title>", 1)[0]
    assert title == "Right to forget · Acme Support"  # the history table once leaked into it


def test_only_a_tenant_admin_may_ask_and_reviewers_and_labelers_see_nothing(
    client, strict, lead, reviewer, labeler
):
    client.force_login(lead)
    assert (
        client.post(
            "/t/acme/erasures/request/", {"user_id": "c", "confirm_user_id": "c", "reason": "r"}
        ).status_code
        == 403
    )
    for user in (reviewer, labeler):
        client.force_login(user)
        assert client.get("/t/acme/erasures/").status_code == 403
    assert (
        not DualControl.objects.exists() and not SourceEvent.objects.filter(erased_at__isnull=False).exists()
    )


def approve(client, memory, reason=""):
    return client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {"action": "approve", "reason": reason, "seen_version": memory.row_version, "view": "page"},
        headers={"HX-Request": "true"},
    )


def held_memory(tenant) -> Memory:
    from memory_review.memories.holds import hold_if_untrusted

    memory = make_memory(
        tenant, subject="payout account", content="Pay refunds to IBAN GB82 WEST 1234 5698 7654 32."
    )
    assert hold_if_untrusted(memory)
    memory.refresh_from_db()
    return memory


def test_approving_a_held_memory_takes_two_people_and_agents_get_its_words_only_then(
    client, strict, reviewer, lead
):
    from memory_review.agents import shapes

    memory = held_memory(strict)
    client.force_login(reviewer)

    asked = approve(client, memory, reason="checked with the customer")

    assert "so to approve it (its words in force) waits for a second lead or admin" in asked.content.decode()
    memory.refresh_from_db()
    assert memory.status == "needs_review" and shapes.withheld(memory)
    request = DualControl.objects.get(kind="approve")
    assert client.post(f"/t/acme/requests/{request.pk}/confirm/").status_code == 403  # a reviewer cannot
    client.force_login(lead)
    assert "Confirm approving it" in client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    client.post(f"/t/acme/requests/{request.pk}/confirm/")

    memory.refresh_from_db()
    request.refresh_from_db()
    assert (memory.status, request.outcome, request.decided_by) == ("active", "confirmed", lead)
    assert not shapes.withheld(memory)
    reason = Transition.objects.filter(memory=memory).latest("seq").reason
    assert reason.startswith("checked with the customer (asked by user") and "two-person rule" in reason


def test_the_lead_who_asked_to_approve_a_held_memory_cannot_confirm_it_alone(client, strict, lead):
    memory = held_memory(strict)
    client.force_login(lead)
    approve(client, memory)
    request = DualControl.objects.get(kind="approve")
    client.post(f"/t/acme/requests/{request.pk}/confirm/")
    memory.refresh_from_db()
    request.refresh_from_db()
    assert memory.status == "needs_review" and request.outcome is None
    assert "already waiting for a second person" in approve(client, memory).content.decode()


def test_without_the_rule_one_person_approves_a_held_memory_and_an_ordinary_one_needs_no_second(
    client, acme, strict, lead
):
    memory = held_memory(strict)
    ordinary = make_memory(strict)
    from memory_review.lifecycle import Actor, transition

    transition(obj=ordinary, action="flag", actor=Actor.policy("v1"), reason="x", seen_version=1)
    ordinary.refresh_from_db()
    client.force_login(lead)
    approve(client, ordinary)
    ordinary.refresh_from_db()
    assert ordinary.status == "active"  # not held: the rule does not ask for a second person

    Tenant.objects.filter(pk=strict.pk).update(two_person_rule=False)
    approve(client, memory)
    memory.refresh_from_db()
    assert memory.status == "active" and not DualControl.objects.exists()


def test_no_one_person_route_puts_a_held_memorys_words_in_force_under_the_rule(
    client, strict, reviewer, lead, policy
):
    """Freezing, rewriting and a later vote were ways round the second approver."""
    from memory_review.agents import shapes
    from memory_review.assessments.invalidation import apply_verdicts
    from tests.factories import judged

    memory = held_memory(strict)
    client.force_login(lead)
    frozen = client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {"action": "freeze", "reason": "", "seen_version": memory.row_version, "view": "page"},
        headers={"HX-Request": "true"},
    )
    assert "so to freeze it (its words in force) waits for a second lead" in frozen.content.decode()
    memory.refresh_from_db()
    assert memory.status == "needs_review" and DualControl.objects.get().change == {"action": "freeze"}

    verdict = judged(memory, policy, disposition="confirmed", still_true=0.97)
    apply_verdicts(verdict.assessment)
    memory.refresh_from_db()
    assert memory.status == "needs_review"  # a vote does not release it

    client.force_login(reviewer)
    client.post(
        f"/t/acme/memories/{memory.pk}/rewrite/",
        {
            "content": memory.content,
            "reason": "same words",
            "seen_version": memory.row_version,
            "view": "page",
        },
        headers={"HX-Request": "true"},
    )
    successor = Memory.objects.get(
        superseded_by__isnull=True, subject="payout account", deleted_at__isnull=True
    )
    assert successor.pk != memory.pk and successor.status == "needs_review" and shapes.withheld(successor)
    assert "rewritten from a memory held" in Transition.objects.get(memory=successor, action="hold").reason


def test_an_approval_waiting_does_not_stop_a_lead_asking_to_forget_the_memory(client, strict, reviewer, lead):
    memory = held_memory(strict)
    client.force_login(reviewer)
    approve(client, memory)
    client.force_login(lead)
    asked = forget(client, memory)
    assert "already waiting" not in asked.content.decode()
    assert set(DualControl.objects.values_list("kind", flat=True)) == {"approve", "forget"}


def act(client, memory, action, reason="checked"):
    memory.refresh_from_db()
    return client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {"action": action, "reason": reason, "seen_version": memory.row_version, "view": "page"},
        headers={"HX-Request": "true"},
    )


def test_killing_a_held_memory_and_restoring_it_takes_a_second_person_too(client, strict, lead):
    from memory_review.agents import shapes
    from tests.factories import make_user

    memory = held_memory(strict)
    client.force_login(lead)
    act(client, memory, "contradict")
    memory.refresh_from_db()
    assert memory.status == "contradicted"  # killing it is one person's to do

    asked = act(client, memory, "restore", reason="it was right after all")

    assert "so to restore it (its words in force) waits for a second lead" in asked.content.decode()
    memory.refresh_from_db()
    assert memory.status == "contradicted"
    request = DualControl.objects.get(kind="approve")
    client.force_login(make_user("acme-lead-2", strict, Role.LEAD))
    client.post(f"/t/acme/requests/{request.pk}/confirm/")
    memory.refresh_from_db()
    assert memory.status == "active" and not shapes.withheld(memory)
    assert Transition.objects.filter(memory=memory).latest("pk").action == "restore"


def test_an_undone_kill_leaves_a_held_memory_held_and_its_words_withheld(client, strict, lead):
    from memory_review.agents import shapes
    from memory_review.memories import holds
    from memory_review.workflow import flow

    memory = held_memory(strict)
    client.force_login(lead)
    act(client, memory, "contradict")
    kill = Transition.objects.filter(memory=memory).latest("pk")

    flow.undo(tenant=strict, move_id=kill.pk, user=lead)

    memory.refresh_from_db()
    assert (memory.status, memory.flagged_for) == ("needs_review", "held") and shapes.withheld(memory)
    assert holds.unreleased(memory)
    assert "waits for a second lead" in act(client, memory, "approve").content.decode()
    memory.refresh_from_db()
    assert memory.status == "needs_review"
