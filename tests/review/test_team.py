"""Assignment and pace (issue 15, item 6): a lead gives items to reviewers by hand or by rules on
channel, kind or subject; "assigned to me" is a filter and a count on the home page; each
reviewer's decisions an hour and the oldest item waiting for them; items past the review target
marked; the oldest wait per tenant on /metrics."""

from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.workflow import assignment
from memory_review.workflow.models import Assignment, AssignmentRule
from tests.factories import flagged, make_user

pytestmark = pytest.mark.django_db


def subjects(page: str) -> list[str]:
    return [
        part.split("</strong>", 1)[0].rsplit(">", 1)[1] for part in page.split('<td class="subject">')[1:]
    ]


def test_a_lead_assigns_an_item_by_hand_and_it_is_the_reviewers(client, acme, policy, lead, reviewer):
    refund = flagged(acme, policy, subject="refund window")
    flagged(acme, policy, subject="office address")
    client.force_login(lead)

    client.post(f"/t/acme/memories/{refund.pk}/assign/", {"to": reviewer.pk})

    mine = Client()
    mine.force_login(reviewer)
    assert subjects(mine.get("/t/acme/review/", {"assigned": "mine"}).content.decode()) == ["refund window"]
    assert "Assigned to you: <strong>1</strong>" in mine.get("/t/acme/").content.decode()
    assert "for acme-reviewer" in client.get("/t/acme/review/").content.decode()
    assert subjects(client.get("/t/acme/review/", {"assigned": "unassigned"}).content.decode()) == [
        "office address"
    ]


def test_a_new_assignment_ends_the_last_and_a_new_stay_in_the_queue_starts_unassigned(
    acme, policy, lead, reviewer
):
    memory = flagged(acme, policy)
    assignment.assign(memory=memory, to=reviewer, by=lead)
    assignment.assign(memory=memory, to=lead, by=lead)
    queue = Memory.objects.for_tenant(acme).needs_review()
    assert list(assignment.assigned_to(queue, lead, acme.pk)) == [memory] and not assignment.assigned_to(
        queue, reviewer, acme.pk
    )
    assert Assignment.objects.filter(ended_at__isnull=False).count() == 1

    for action in ("approve", "flag"):  # decided, then back in review later
        transition(
            obj=memory, action=action, actor=Actor.user(lead), reason="x", seen_version=memory.row_version
        )

    assert not assignment.assigned_to(queue, lead, acme.pk).exists()  # that assignment was for its last stay


def test_rules_hand_out_what_matches_and_a_hand_assignment_wins(client, acme, policy, lead, reviewer):
    slack = flagged(acme, policy, subject="eu region", source="slack")
    refund = flagged(acme, policy, subject="Refund window", kind="preference")
    other = flagged(acme, policy, subject="office address")
    client.force_login(lead)

    client.post("/t/acme/review/team/rules/", {"to": reviewer.pk, "channel": "slack"})
    client.post("/t/acme/review/team/rules/", {"to": reviewer.pk, "subject": "refund"})
    queue = Memory.objects.for_tenant(acme).needs_review()
    assert set(assignment.assigned_to(queue, reviewer, acme.pk)) == {slack, refund}

    assignment.assign(memory=slack, to=lead, by=lead)
    assert set(assignment.assigned_to(queue, reviewer, acme.pk)) == {refund}
    assert list(assignment.unassigned(queue, acme.pk)) == [other]
    client.post(
        f"/t/acme/review/team/rules/{AssignmentRule.objects.get(subject_contains='refund').pk}/remove/"
    )
    assert not assignment.assigned_to(queue, reviewer, acme.pk).exists()
    assert AssignmentRule.objects.count() == 2  # kept, removed by a date


def test_only_leads_assign_and_only_to_reviewers_of_the_tenant(client, acme, globex, policy, lead, reviewer):
    memory = flagged(acme, policy)
    auditor = make_user("acme-auditor", acme, "auditor")
    stranger = make_user("globex-lead", globex, "lead")

    client.force_login(reviewer)
    assert client.post(f"/t/acme/memories/{memory.pk}/assign/", {"to": reviewer.pk}).status_code == 403
    assert client.post("/t/acme/review/team/rules/", {"to": reviewer.pk, "kind": "fact"}).status_code == 403
    client.force_login(lead)
    refused = client.post(f"/t/acme/memories/{memory.pk}/assign/", {"to": auditor.pk}, follow=True)
    assert "Not assigned: acme-auditor does not review in acme" in refused.content.decode()
    assert client.post(f"/t/acme/memories/{memory.pk}/assign/", {"to": stranger.pk}).status_code == 404
    empty = client.post("/t/acme/review/team/rules/", {"to": reviewer.pk})
    assert (
        empty.status_code == 400
        and "a rule needs a channel, a kind or words of the subject" in empty.content.decode()
    )
    assert not Assignment.objects.exists() and not AssignmentRule.objects.exists()


def test_the_team_page_shows_each_reviewers_pace_and_what_waits_for_them(
    client, acme, policy, lead, reviewer
):
    waiting = flagged(acme, policy, subject="refund window")
    assignment.assign(memory=waiting, to=reviewer, by=lead)
    for _ in range(3):
        memory = flagged(acme, policy)
        transition(
            obj=memory, action="approve", actor=Actor.user(lead), reason="ok", seen_version=memory.row_version
        )
    client.force_login(lead)

    page = client.get("/t/acme/review/team/").content.decode()

    lead_row = page.split("<td>acme-lead</td>", 1)[1].split("</tr>", 1)[0]
    reviewer_row = page.split("<td>acme-reviewer</td>", 1)[1].split("</tr>", 1)[0]
    assert '<td class="num">3</td><td class="num">3</td>' in lead_row  # last hour, today
    assert '<td class="num">1</td>' in reviewer_row and "minute" in reviewer_row  # 1 waiting, its age
    assert "The oldest item has waited" in page


def test_items_past_the_review_target_are_marked_and_counted(client, acme, policy, lead, settings):
    settings.REVIEW_TARGET_HOURS = 24
    with time_machine.travel(timezone.now() - timedelta(hours=30)):
        flagged(acme, policy, subject="stale item")
    flagged(acme, policy, subject="fresh item")
    client.force_login(lead)

    queue = client.get("/t/acme/review/").content.decode()
    home = client.get("/t/acme/").content.decode()

    stale = queue.split("stale item", 1)[1].split("</tr>", 1)[0]
    fresh = queue.split("fresh item", 1)[1].split("</tr>", 1)[0]
    assert 'class="late"' in stale and 'class="late"' not in fresh
    assert "1 item waited longer than the 24 h review target" in home


def test_a_lead_sets_the_tenants_review_target(client, acme, globex, policy, lead, reviewer, settings):
    settings.REVIEW_TARGET_HOURS = 24
    with time_machine.travel(timezone.now() - timedelta(hours=30)):
        flagged(acme, policy, subject="stale item")
    client.force_login(reviewer)
    assert client.post("/t/acme/review/team/target/", {"hours": "48"}).status_code == 403
    client.force_login(lead)

    for bad, says in (
        ("0", "greater than or equal to 1"),
        ("721", "less than or equal to 720"),
        ("", "Say how many hours"),
        ("x", "whole number"),
    ):
        answer = client.post("/t/acme/review/team/target/", {"hours": bad})
        assert answer.status_code == 400 and says in answer.content.decode(), bad
    assert assignment.target_hours(acme.pk) == 24

    assert client.post("/t/acme/review/team/target/", {"hours": "48"}).status_code == 302

    assert assignment.target_hours(acme.pk) == 48 and assignment.target_hours(globex.pk) == 24
    queue = client.get("/t/acme/review/").content.decode()
    assert 'class="late"' not in queue.split("stale item", 1)[1].split("</tr>", 1)[0]
    assert "past the" not in client.get("/t/acme/review/team/").content.decode()
    assert not assignment.past_target(acme)


def test_metrics_export_the_oldest_wait_per_tenant(acme, globex, policy):
    with time_machine.travel(timezone.now() - timedelta(hours=2)):
        flagged(acme, policy)

    text = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()

    acme_line = next(
        line
        for line in text.splitlines()
        if line.startswith('memory_review_review_queue_oldest_wait_seconds{tenant="acme"}')
    )
    assert 7000 < float(acme_line.split()[-1]) < 7400
    assert 'memory_review_review_queue_oldest_wait_seconds{tenant="globex"} 0.0' in text


def test_on_a_large_tenant_what_waits_is_kept_counted_by_a_job_and_counted_again_when_assignments_change(
    client, acme, policy, lead, reviewer, settings, monkeypatch
):
    from memory_review.calibration import figures

    settings.FIGURES_INLINE_BELOW = 0  # every tenant counts as large
    queued = []
    monkeypatch.setattr(figures, "_queue", lambda name, tenant_id, params: queued.append(name))
    first = flagged(acme, policy, subject="refund window")
    assignment.assign(memory=first, to=reviewer, by=lead)
    client.force_login(lead)

    waiting = client.get("/t/acme/review/team/").content.decode()
    home_waiting = client.get("/t/acme/").content.decode()
    figures.refresh("team_waiting", acme.pk, {})  # what the worker runs
    counted = client.get("/t/acme/review/team/").content.decode()
    client.force_login(reviewer)
    home_counted = client.get("/t/acme/").content.decode()
    client.force_login(lead)
    assignment.assign(memory=flagged(acme, policy, subject="delivery"), to=reviewer, by=lead)
    stale = client.get("/t/acme/review/team/").content.decode()

    assert "counting…" in waiting and "Counting what waits for each reviewer" in waiting
    assert queued[0] == "team_waiting"
    reviewer_row = counted.split("<td>acme-reviewer</td>", 1)[1].split("</tr>", 1)[0]
    assert '<td class="num">1</td>' in reviewer_row and "Figures as of" in counted
    assert "Assigned to you: <strong>counting…</strong>" in home_waiting
    assert "Assigned to you: <strong>1</strong>" in home_counted
    assert "assignments or their rules changed" in stale and "A job is counting them again" in stale


def test_more_items_past_the_target_than_are_counted_are_said_as_more_than(
    client, acme, policy, lead, settings, monkeypatch
):
    settings.REVIEW_TARGET_HOURS = 24
    monkeypatch.setattr(assignment, "LATE_COUNTED_UP_TO", 2)
    with time_machine.travel(timezone.now() - timedelta(hours=30)):
        for i in range(3):
            flagged(acme, policy, subject=f"stale {i}")
    client.force_login(lead)

    home = client.get("/t/acme/").content.decode()
    team = client.get("/t/acme/review/team/").content.decode()

    assert "More than 2 items waited longer than the 24 h review target" in home
    assert "more than 2 items are past it" in team
