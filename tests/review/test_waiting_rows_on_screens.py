"""With AUDIT_SEQUENCER=deferred (the default) a lead's move has no position until the sequencer
links it, a moment after its commit. The screens that read moves must show such a move where it
belongs (the newest), say it waits rather than print an empty position, and page past it."""

import pytest

from memory_review.audit import sequencer
from memory_review.integrity import heads
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.review import audit_trail, memory_page
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def deferred(settings):
    settings.AUDIT_SEQUENCER = heads.DEFERRED


def moved(memory: Memory, action: str, user, reason: str) -> None:
    memory.refresh_from_db()
    transition(
        obj=memory, action=action, actor=Actor.user(user), reason=reason, seen_version=memory.row_version
    )


@pytest.fixture
def waiting_move(acme, lead, deferred):
    memory = make_memory(acme, subject="refund limit", content="Refunds up to 50 EUR need no approval.")
    moved(memory, "freeze", lead, "legal hold, linked")
    sequencer.sequence(acme.pk)
    moved(memory, "unfreeze", lead, "hold lifted, still waiting")
    assert memory.transitions.filter(seq__isnull=True).count() == 1
    return memory


SCREENS = {
    "memory page": "/t/acme/memories/{pk}/",
    "lineage": "/t/acme/audit/memories/{pk}/",
    "audit trail": "/t/acme/audit/",
    "home": "/t/acme/",
}


@pytest.mark.parametrize("screen", SCREENS)
def test_a_move_waiting_for_its_position_shows_first_and_says_so(client, lead, waiting_move, screen):
    client.force_login(lead)

    page = client.get(SCREENS[screen].format(pk=waiting_move.pk)).content.decode()

    assert "hold lifted, still waiting" in page, screen
    newest, older = page.index("hold lifted, still waiting"), page.index("legal hold, linked")
    if screen == "lineage":  # oldest first
        assert older < newest
    elif screen != "home":  # newest first (home shows the reasons of neither)
        assert newest < older, screen
    assert "#None" not in page and ">None<" not in page, screen


@pytest.mark.parametrize("few", [1000, 2])  # the matches' ids, or the trail walked by position
def test_the_trail_by_subject_shows_the_waiting_move_above_the_linked_ones(
    client, auditor, waiting_move, monkeypatch, few
):
    monkeypatch.setattr(audit_trail, "FEW_SUBJECTS", few)
    client.force_login(auditor)

    rows = client.get("/t/acme/audit/", {"subject": "refund"}).context["listing"].rows

    assert [row.reason for row in rows][:2] == ["hold lifted, still waiting", "legal hold, linked"]
    assert rows[0].seq is None and all(row.seq for row in rows[1:])


def test_the_history_pages_past_linked_moves_with_one_waiting_on_the_first(client, acme, lead, deferred):
    memory = make_memory(acme, subject="refund limit")
    for n in range(13):
        moved(memory, "freeze", lead, f"hold {n}")
        moved(memory, "unfreeze", lead, f"lift {n}")
    sequencer.sequence(acme.pk)
    moved(memory, "freeze", lead, "hold, still waiting")
    client.force_login(lead)

    first = client.get(f"/t/acme/memories/{memory.pk}/").context["history"]
    second = client.get(f"/t/acme/memories/{memory.pk}/", {"moves_after": first.next_cursor}).context[
        "history"
    ]

    reasons = [move.reason for move in [*first.rows, *second.rows]]
    assert reasons[0] == "hold, still waiting" and len(first.rows) == memory_page.HISTORY_PAGE + 1
    assert len(reasons) == len(set(reasons)) == 27  # every move once: none twice, none lost


def test_of_two_moves_waiting_together_the_later_is_the_latest_decision(client, acme, lead, deferred):
    memory = make_memory(acme, subject="refund limit")
    moved(memory, "freeze", lead, "hold for legal")
    moved(memory, "unfreeze", lead, "legal cleared it")  # both wait: no sequencer run between

    client.force_login(lead)
    why = client.get(f"/t/acme/memories/{memory.pk}/").context["evidence"].sentence

    assert "unfroze it" in why and "legal cleared it" in why
