"""The audit trail between two dates: newest first by time, paged, from the (tenant, created_at,
seq) index (issue 17: by the chain's order, a day months ago walked back through every later move)."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.review import audit_trail
from tests.factories import flagged

pytestmark = pytest.mark.django_db


def test_the_trail_between_two_dates_shows_that_periods_moves_newest_first_a_page_at_a_time(
    client, acme, policy, auditor, monkeypatch
):
    monkeypatch.setattr(audit_trail, "TRAIL_PAGE", 2)
    now = timezone.now()
    for days, subject in ((30, "before"), (10.5, "in 1"), (10, "in 2"), (9, "in 3"), (1, "after")):
        with time_machine.travel(now - timedelta(days=days, hours=-1)):
            flagged(acme, policy, subject=subject)
    since, until = (now - timedelta(days=11)).date(), (now - timedelta(days=8)).date()
    client.force_login(auditor)

    first = client.get("/t/acme/audit/", {"since": since, "until": until})
    cursor = first.context["listing"].next_cursor
    second = client.get("/t/acme/audit/", {"since": since, "until": until, "after": cursor})

    rows = first.context["listing"].rows + second.context["listing"].rows
    assert [row.memory.subject for row in rows] == ["in 3", "in 2", "in 1"]
    assert second.context["listing"].next_cursor is None
    assert [row.created_at for row in rows] == sorted((row.created_at for row in rows), reverse=True)


def test_a_page_link_of_the_whole_trail_is_refused_between_dates_and_says_why(client, acme, policy, auditor):
    for i in range(3):
        flagged(acme, policy, subject=f"fact {i}")
    client.force_login(auditor)
    whole = client.get("/t/acme/audit/")
    cursor = whole.context["listing"].rows[0]
    from memory_review.review.paging import encode

    today = timezone.now().date()
    answer = client.get("/t/acme/audit/", {"since": today, "after": encode(cursor, ("-seq",))})

    assert answer.status_code == 400
    assert "belongs to another list or order" in answer.content.decode()
