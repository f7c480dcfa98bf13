"""Every word a reviewer reads is right (issue 28, item 4): the evidence beside a memory is the vote
that sent it to review, or the newest that bears on it, never one Jev found unrelated; "why it is
here" is said only of an item in review; "last judged" is the newest vote's time; reasons name
people, and a reason nobody typed is a muted note, not a quotation; "just now", never "0 minutes
ago"."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.lifecycle import Actor, transition
from memory_review.review import words
from tests.demo_data import seed_demo
from tests.factories import flagged, judged, make_memory

pytestmark = pytest.mark.django_db


def versus(page: str) -> str:
    """The panel above the fold: the memory, the evidence beside it, why it is where it is."""
    return page.split('class="versus"', 1)[1].split("</section>", 1)[0]


def votes(panel: str) -> list[str]:
    """The vote figures the panel shows (not any digits of its timestamps: 16:07:40.260747 holds
    "0.26")."""
    return re.findall(r'class="vote-num">([^<]*)<', panel)


@pytest.fixture
def maria(lead):
    lead.first_name, lead.last_name = "Maria", "Chen"
    lead.save()
    return lead


def test_in_review_the_evidence_is_the_vote_that_sent_it_there_not_a_newer_unrelated_one(
    client, acme, maria, policy
):
    memory = flagged(acme, policy, still_true=0.46, subject="delivery office")
    event = memory.verdicts.get().event
    type(event).objects.filter(pk=event.pk).update(source="slack")
    judged(memory, policy, disposition="unrelated", bears=0.26, still_true=0.5, source="email")
    client.force_login(maria)

    panel = versus(client.get(f"/t/acme/memories/{memory.pk}/").content.decode())

    assert "The new evidence" in panel and "today&#x27;s Slack message" in panel
    assert "Email" not in panel
    assert "Why it is here:" in panel and "Jev cannot tell whether" in panel
    assert votes(panel) and "0.26" not in votes(panel)  # the unrelated vote's bears


def test_a_memory_out_of_review_shows_its_newest_bearing_vote_and_is_not_here_for_review(
    client, acme, maria, policy
):
    """Memory 263 on the demo: unfrozen a month ago, confirmed a week ago, and an unrelated event
    judged against it minutes ago."""
    memory = make_memory(acme, subject="price match")
    with time_machine.travel(timezone.now() - timedelta(days=30)):
        transition(
            obj=memory, action="freeze", actor=Actor.user(maria), reason="legal review", seen_version=1
        )
        transition(
            obj=memory, action="unfreeze", actor=Actor.user(maria), reason="legal done", seen_version=2
        )
    with time_machine.travel(timezone.now() - timedelta(days=8)):
        judged(memory, policy, disposition="confirmed", still_true=0.88, source="chat")  # p(true): its vote
    judged(memory, policy, disposition="unrelated", bears=0.26, still_true=0.5, source="email")
    client.force_login(maria)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    panel = versus(page)
    assert "Why it is here" not in panel
    assert "Why it is active:</strong> Maria Chen unfroze it 1\xa0month ago: “legal done”" in panel
    assert "The newest evidence" in panel and "Chat message" in panel and "Email" not in panel
    assert "0.88" in votes(panel) and "0.26" not in votes(panel)
    facts = page.split('class="facts"', 1)[1].split("</dl>", 1)[0]
    assert "0.88" in facts and "voted" in facts and "1\xa0week ago" in facts  # p(true) and its vote's time
    judged_line = facts.split("Last judged", 1)[1].split("</dd>", 1)[0]
    assert "just now" in judged_line and "(unrelated)" in judged_line and "week" not in judged_line


def test_a_memory_never_judged_says_so(client, acme, maria):
    memory = make_memory(acme, subject="support hours")
    client.force_login(maria)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    assert "Why it is active:</strong> Written by agent support-bot; nothing has moved it since." in page
    assert "Why it is here" not in page
    assert 'Last judged</dt><dd><span class="muted">never</span>' in page


def test_a_decision_without_a_reason_is_a_muted_note_not_a_quotation(client, acme, maria, policy):
    memory = flagged(acme, policy, subject="delivery office")
    client.force_login(maria)

    client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {"action": "approve", "reason": "", "seen_version": memory.row_version},
    )
    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    panel = versus(page)
    assert 'Maria Chen approved it just now <span class="muted">(no reason given)</span>' in panel
    assert "“" not in panel.split("Why it is", 1)[1]
    assert "0 minutes" not in page


def test_a_forgotten_memorys_reason_names_who_asked_as_the_audit_page_does(client, db):
    seed_demo()
    from django.contrib.auth import get_user_model

    from memory_review.audit.models import Transition

    client.force_login(get_user_model().objects.get(username="acme-lead"))
    forgets = Transition.objects.filter(action="forget", reason__contains="asked by user ")
    assert forgets.exists()

    for move in forgets:
        page = client.get(f"/t/acme/memories/{move.memory_id}/").content.decode()
        panel = versus(page)
        assert "Why it is deleted:" in panel and "Why it is here" not in panel
        assert "asked by Maria Chen" in panel and "user 2" not in panel and "asked by user" not in panel
        listed = client.get("/t/acme/memories/", {"status": "deleted"}).content.decode()
        assert "asked by user" not in listed and "asked by Maria Chen" in listed


def test_times_are_said_as_a_person_says_them():
    now = timezone.now()

    assert words.ago(now - timedelta(seconds=20), now) == "just now"
    assert words.ago(now - timedelta(minutes=3), now) == "3\xa0minutes ago"  # kept on one line
    assert words.ago(now - timedelta(days=15), now) == "2\xa0weeks ago"
    assert words.waited(now - timedelta(seconds=5), now) == "under a minute"
    assert words.waited(now - timedelta(days=9, hours=3), now) == "1\xa0week"


def test_people_in_a_recorded_reason_are_named_and_a_removed_one_is_said_to_be(maria):
    reason = f"Forgotten. (asked by user {maria.pk} at 2026-11-05; request 1) by user:{maria.pk}, user 99999"
    from memory_review.tenancy.names import actor_names

    said = words.named(reason, actor_names(words.people_in([reason])))

    assert (
        said
        == "Forgotten. (asked by Maria Chen at 2026-11-05; request 1) by Maria Chen, a person no longer here"
    )


def test_the_audit_trail_asks_for_no_memory_id_and_names_the_memory_it_is_narrowed_to(client, acme, maria):
    memory = make_memory(acme, subject="price match")
    client.force_login(maria)

    plain = client.get("/t/acme/audit/").content.decode()
    narrowed = client.get("/t/acme/audit/", {"memory": memory.pk}).content.decode()

    assert "Memory id" not in plain and 'name="memory" value=' not in plain
    assert "Subject contains" in plain
    assert f'type="hidden" name="memory" value="{memory.pk}"' in narrowed
    assert "Only the moves of <a" in narrowed and "“price match”</a>" in narrowed
