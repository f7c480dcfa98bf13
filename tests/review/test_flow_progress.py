"""The flow's progress line (done today, left, your pace) is counted in the database, in a fixed
number of queries whatever the day held (issue 29: a reviewer 50,001 decisions into a busy day
had every decision's time read into Python, 267 ms), and says "more than" past the bound a
filtered queue is counted up to."""

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory_review.lifecycle import Actor, transition
from memory_review.review import lists
from memory_review.workflow import flow
from tests.factories import flagged

pytestmark = pytest.mark.django_db


def decided(memories, user, action="approve"):
    for memory in memories:
        memory.refresh_from_db()
        transition(
            obj=memory,
            action=action,
            actor=Actor.user(user),
            reason="checked",
            seen_version=memory.row_version,
        )


def test_done_today_takes_away_what_was_undone_and_the_pace_is_per_hour_of_work(acme, policy, lead):
    start = timezone.now().replace(hour=10, minute=0, second=0, microsecond=0)
    items = [flagged(acme, policy, still_true=0.5, subject=f"item {k}") for k in range(6)]
    with time_machine.travel(start - timedelta(days=1), tick=False):
        decided(items[:1], lead)  # yesterday: not today's, not this hour's
    with time_machine.travel(start + timedelta(minutes=10), tick=False):
        decided(items[1:3], lead)
    with time_machine.travel(start + timedelta(minutes=40), tick=False):
        decided(items[3:6], lead)
        decided(items[5:6], lead, action="reopen")  # undone

    with CaptureQueriesContext(connection) as few:
        shown = flow.progress(acme, user=lead, left=7, now=start + timedelta(minutes=50))

    assert (shown.done_today, shown.left, shown.more_left) == (4, 7, False)
    # 5 decisions in the hour since 10:00, the first 40 minutes before "now": 5 x 60 / 40
    assert shown.per_hour == round(5 * 3600 / (40 * 60))
    assert len(few) == 1


def test_its_queries_do_not_grow_with_the_days_decisions(acme, policy, lead):
    now = timezone.now()
    items = [flagged(acme, policy, still_true=0.5, subject=f"item {k}") for k in range(30)]
    decided(items[:2], lead)
    with CaptureQueriesContext(connection) as two:
        flow.progress(acme, user=lead, left=0, now=now + timedelta(minutes=1))
    decided(items[2:], lead)
    with CaptureQueriesContext(connection) as thirty:
        later = flow.progress(acme, user=lead, left=0, now=now + timedelta(minutes=1))

    assert later.done_today == 30 and len(two) == len(thirty) == 1


def test_the_flow_says_more_than_when_a_filtered_queue_is_past_its_count(
    client, acme, policy, lead, monkeypatch, settings
):
    monkeypatch.setattr(lists, "COUNTED_UP_TO", 2)
    settings.REVIEW_BULK_MAX = 2
    for k in range(4):
        flagged(acme, policy, still_true=0.5, subject=f"refund {k}")
    client.force_login(lead)

    filtered = client.get("/t/acme/review/flow/?q=refund").content.decode()
    whole = client.get("/t/acme/review/flow/").content.decode()

    assert "more than 2</strong> left" in filtered
    assert "4</strong> left" in whole and "more than" not in whole.split("left", 1)[0]


def test_a_day_past_the_bound_says_more_than_on_the_flow_and_the_team_page(
    client, acme, policy, lead, monkeypatch
):
    from memory_review.workflow import assignment

    monkeypatch.setattr(flow, "DAY_READ_MOST", 5)
    start = timezone.now().replace(hour=10, minute=0, second=0, microsecond=0)
    items = [flagged(acme, policy, still_true=0.5, subject=f"item {k}") for k in range(8)]
    with time_machine.travel(start + timedelta(minutes=5), tick=False):
        decided(items[:3], lead)
    with time_machine.travel(start + timedelta(minutes=20), tick=False):
        decided(items[3:], lead)
        shown = flow.progress(acme, user=lead, left=0, now=start + timedelta(minutes=30))
        pace = next(p for p in assignment.team(acme, waiting=None) if p.user_id == lead.pk)
        client.force_login(lead)
        flow_page = client.get("/t/acme/review/flow/").content.decode()
        team_page = client.get("/t/acme/review/team/").content.decode()

    # the newest five of eight read: "more than 5", never a count that stops silently
    assert (shown.done_today, shown.more_done) == (5, True)
    assert (pace.today, pace.more) == (5, True)
    assert "more than 5</strong> done today" in flow_page
    assert ">more than 5<" in team_page

    monkeypatch.setattr(flow, "DAY_READ_MOST", 50)
    whole = flow.progress(acme, user=lead, left=0, now=start + timedelta(minutes=30))
    assert (whole.done_today, whole.more_done) == (8, False)
