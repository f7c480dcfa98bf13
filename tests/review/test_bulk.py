"""Bulk actions act on exactly the filtered set the lead confirmed: each memory its own audited
transition; what changed meanwhile is skipped and listed, never overwritten."""

import pytest
from django.test import override_settings

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from tests.factories import flagged, memory_in

pytestmark = pytest.mark.django_db


def preview(client, **fields):
    data = {"list_name": "queue", "action": "approve", "reason": "checked against the runbook", **fields}
    return client.post("/t/acme/bulk/", data)


def test_the_preview_shows_exactly_which_memories_and_how_many_and_changes_nothing(
    client, acme, lead, policy
):
    chosen = [flagged(acme, policy, subject=f"slack {i}", source="slack") for i in range(3)]
    flagged(acme, policy, subject="from email", source="email")
    client.force_login(lead)

    response = preview(client, source="slack")

    assert response.status_code == 200
    page = response.content.decode()
    assert "Approve 3 memories?" in page and "Source channel: Slack" in page
    assert all(m.subject in page for m in chosen) and "from email" not in page
    assert Memory.objects.needs_review().count() == 4


def test_confirming_acts_on_that_set_only_and_skips_what_changed_meanwhile(
    client, acme, lead, reviewer, policy
):
    first, changed, third = (
        flagged(acme, policy, subject=s, source="slack") for s in ("first", "changed", "third")
    )
    client.force_login(lead)
    ticket = preview(client, source="slack").context["ticket"]
    # Meanwhile: a colleague freezes one, the policy flags a fourth that now matches the filter too.
    transition(obj=changed, action="freeze", actor=Actor.user(reviewer), reason="hold", seen_version=2)
    flagged(acme, policy, subject="late", source="slack")

    response = client.post("/t/acme/bulk/apply/", {"ticket": ticket})

    page = response.content.decode()
    statuses = dict(Memory.objects.values_list("subject", "status"))
    assert statuses == {"first": "active", "changed": "frozen", "third": "active", "late": "needs_review"}
    assert "2</strong> memories were approved" in page
    assert "changed since you chose it: now frozen, by acme-reviewer" in page
    approvals = Transition.objects.filter(action="approve")
    assert approvals.count() == 2
    assert set(approvals.values_list("reason", flat=True)) == {"checked against the runbook"}
    assert verification.problem_in(acme) is None
    assert Transition.objects.filter(memory=first, action="approve").exists()


def test_a_set_larger_than_the_limit_is_refused_with_its_size(client, acme, lead, policy):
    for _i in range(4):
        flagged(acme, policy)
    client.force_login(lead)
    with override_settings(REVIEW_BULK_MAX=3):
        response = preview(client)
    assert response.status_code == 400
    assert "4 memories match; a bulk action takes at most 3" in response.content.decode()
    assert "ticket" not in response.context or response.context.get("ticket") is None


def test_only_leads_and_admins_act_in_bulk(client, acme, reviewer, auditor, policy):
    flagged(acme, policy)
    for user in (reviewer, auditor):
        client.force_login(user)
        assert preview(client).status_code == 403
        assert client.post("/t/acme/bulk/apply/", {"ticket": "x"}).status_code == 403
    assert Memory.objects.needs_review().count() == 1


def test_a_damaged_confirmation_writes_nothing(client, acme, lead, policy):
    flagged(acme, policy)
    client.force_login(lead)
    ticket = preview(client).context["ticket"]

    response = client.post("/t/acme/bulk/apply/", {"ticket": ticket[:-3] + "abc"})

    assert response.status_code == 400
    assert "damaged or more than an hour old" in response.content.decode()
    assert Memory.objects.needs_review().count() == 1


def test_a_bulk_restore_on_all_memories_revives_the_dead_ones_chosen(client, acme, lead):
    dead = [memory_in(acme, "contradicted") for _ in range(2)]
    memory_in(acme, "superseded")
    client.force_login(lead)

    ticket = client.post(
        "/t/acme/bulk/",
        {"list_name": "memories", "action": "restore", "reason": "false kills", "status": "contradicted"},
    ).context["ticket"]
    client.post("/t/acme/bulk/apply/", {"ticket": ticket})

    assert sorted(Memory.objects.values_list("status", flat=True)) == ["active", "active", "superseded"]
    assert all(Memory.objects.get(pk=m.pk).status == "active" for m in dead)
