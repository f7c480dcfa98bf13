"""A queue row says, in one line a cell, what a lead needs to decide: the memory, the new
evidence's first line, why it is here (the full sentence on demand), who holds it; actions on a
colleague's item are disabled and name them; bulk offers only the moves valid for the set."""

import pytest

from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.workflow import claims
from memory_review.workflow.models import Claim
from tests.factories import flagged, make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(acme, policy):
    memory = flagged(acme, policy, still_true=0.46, subject="delivery office")
    memory.verdicts.update(replaces=0.7)
    event = memory.verdicts.get().event
    type(event).objects.filter(pk=event.pk).update(
        source="slack", text="From Monday deliveries go to Lyon.\nThe Paris office closes on Friday."
    )
    return memory


def row_of(page: str, memory) -> str:
    return page.split(f'id="memory-{memory.pk}"', 1)[1].split("</tr>", 1)[0]


def test_a_row_shows_the_evidence_first_line_and_why_in_one_line_with_the_rest_on_demand(client, lead, item):
    client.force_login(lead)

    row = row_of(client.get("/t/acme/review/").content.decode(), item)

    assert "Slack:</span> From Monday deliveries go to Lyon." in row and "Paris office closes" not in row
    assert "<summary" in row and "Unsure: still true 0.46 (a person decides 0.35–0.65)" in row
    assert "Jev cannot tell whether" in row and "replaces this: still true 0.46" in row  # the full sentence
    assert "<kbd>a</kbd>" in row and "<kbd>f</kbd>" in row and "<kbd>c</kbd>" in row
    assert "policy:v1" not in row and "still_true" not in row  # no log line


def test_on_a_colleagues_item_the_actions_are_disabled_and_name_them(client, reviewer, lead, item):
    reviewer.first_name, reviewer.last_name = "Tomás", "Ortega"
    reviewer.save()
    claims.claim_take(memory=item, user=reviewer)
    client.force_login(lead)

    row = row_of(client.get("/t/acme/review/").content.decode(), item)
    page = client.get(f"/t/acme/memories/{item.pk}/").content.decode()

    assert 'disabled title="Tomás Ortega holds it">Approve' in row and "Ask Tomás Ortega to release" in row
    assert "Take over" in row  # a lead may
    assert 'name="action" value="approve" disabled title="Tomás Ortega holds this item"' in page
    assert "Take it over" in page


def test_asking_to_release_tells_the_holder_and_a_lead_can_take_it_over(client, reviewer, lead, acme, item):
    reviewer.first_name, lead.first_name, lead.last_name = "Tomás", "Maria", "Chen"
    reviewer.save()
    lead.save()
    claims.claim_take(memory=item, user=reviewer)
    client.force_login(lead)

    client.post(f"/t/acme/memories/{item.pk}/claim/ask/", {"view": "claim"})
    client.force_login(reviewer)
    theirs = client.get(f"/t/acme/memories/{item.pk}/").content.decode()
    client.force_login(lead)
    client.post(f"/t/acme/memories/{item.pk}/claim/take-over/")

    assert "Maria Chen asks you to release it" in theirs
    held = Claim.objects.held().get(memory=item)
    assert held.holder == lead
    ended = Claim.objects.exclude(pk=held.pk).get(memory=item)
    assert ended.holder == reviewer and "reassigned to Maria Chen by Maria Chen" in ended.release_note


def test_a_reviewer_cannot_take_over(client, reviewer, acme, item):
    from tests.factories import make_user

    other = make_user("acme-reviewer-2", acme, "reviewer")
    claims.claim_take(memory=item, user=other)
    client.force_login(reviewer)

    assert client.post(f"/t/acme/memories/{item.pk}/claim/take-over/").status_code == 403
    assert Claim.objects.held().get(memory=item).holder == other


def test_bulk_offers_only_the_moves_valid_for_the_statuses_listed(client, lead, acme, policy, item):
    dead = make_memory(acme, subject="old phone")
    transition(obj=dead, action="contradict", actor=Actor.user(lead), reason="gone", seen_version=1)
    client.force_login(lead)

    queue = client.get("/t/acme/review/").content.decode()
    dead_only = client.get("/t/acme/memories/", {"status": "contradicted"}).content.decode()
    mixed = client.get("/t/acme/memories/").content.decode()

    def offered(page):
        form = page.split('name="action">', 1)[1].split("</select>", 1)[0] if 'name="action">' in page else ""
        return [part.split('"', 1)[0] for part in form.split('<option value="')[1:]]

    assert offered(queue) == ["approve", "freeze", "contradict", "supersede"]
    assert offered(dead_only) == ["restore"]
    assert offered(mixed) == [] and "No one move applies to every status in this list" in mixed
    assert Memory.objects.count() == 2
