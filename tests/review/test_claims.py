"""Claiming: a reservation that lapses unless renewed, seen by everyone, released or reassigned
by a lead, and kept on record."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.workflow.claims import (
    ClaimError,
    ClaimHeld,
    claim_reassign,
    claim_release,
    claim_take,
    held_claim,
)
from memory_review.workflow.models import Claim
from tests.factories import flagged, make_memory, make_user

pytestmark = pytest.mark.django_db


def test_a_reviewer_claims_an_item_and_others_see_who_holds_it(client, acme, lead, reviewer, policy):
    memory = flagged(acme, policy)
    reviewer.first_name, reviewer.last_name = "Tomás", "Ortega"
    reviewer.save()
    client.force_login(reviewer)

    response = client.post(
        f"/t/acme/memories/{memory.pk}/claim/", {"view": "claim"}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 200
    region = response.content.decode()
    assert region.lstrip().startswith(
        '<div id="claim"'
    )  # only the claim's region: a reason being typed stays
    assert "You hold this item until" in region
    claim = held_claim(memory)
    assert claim.holder == reviewer
    assert claim.expires_at - claim.claimed_at == timedelta(minutes=15)
    client.force_login(lead)
    assert (
        "Tomás Ortega</strong> holds this item"
        in client.get(f"/t/acme/memories/{memory.pk}/").content.decode()
    )
    assert "Tomás Ortega" in client.get("/t/acme/review/").content.decode()


def test_a_second_reviewer_cannot_take_a_held_item(client, acme, lead, reviewer, policy):
    memory = flagged(acme, policy)
    claim_take(memory=memory, user=lead)
    client.force_login(reviewer)

    response = client.post(
        f"/t/acme/memories/{memory.pk}/claim/", {"view": "row"}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 409
    assert "holds this item until" in response.content.decode()
    assert Claim.objects.count() == 1
    assert held_claim(memory).holder == lead


def test_the_open_page_renews_the_claim(client, acme, reviewer, policy):
    memory = flagged(acme, policy)
    claim = claim_take(memory=memory, user=reviewer)
    client.force_login(reviewer)
    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()
    assert 'hx-trigger="every 60s"' in page and f"/t/acme/memories/{memory.pk}/claim/renew/" in page

    with time_machine.travel(timezone.now() + timedelta(minutes=10)):
        client.post(
            f"/t/acme/memories/{memory.pk}/claim/renew/", {"view": "claim"}, headers={"HX-Request": "true"}
        )
        renewed = held_claim(memory)

    assert renewed.pk == claim.pk
    assert renewed.expires_at > claim.expires_at + timedelta(minutes=9)


def test_a_claim_lapses_after_fifteen_minutes_and_another_reviewer_may_take_it(acme, lead, reviewer, policy):
    memory = flagged(acme, policy)
    claim_take(memory=memory, user=reviewer)

    with time_machine.travel(timezone.now() + timedelta(minutes=16)):
        assert held_claim(memory) is None
        claim_take(memory=memory, user=lead)
        assert held_claim(memory).holder == lead

    assert Claim.objects.filter(memory=memory).count() == 2  # the lapsed one stays on record


def test_the_holder_or_a_lead_releases_a_claim_and_a_reviewer_cannot_release_anothers(
    acme, lead, reviewer, policy
):
    memory = flagged(acme, policy)
    colleague = make_user("colleague", acme, "reviewer")
    claim_take(memory=memory, user=reviewer)

    with pytest.raises(ClaimHeld):
        claim_release(memory=memory, by=colleague, note="mine now", can_lead=False)
    released = claim_release(memory=memory, by=lead, note="released by the lead", can_lead=True)

    released.refresh_from_db()
    assert (released.released_by, released.release_note) == (lead, "released by the lead")
    assert held_claim(memory) is None


def test_a_lead_reassigns_an_item_and_both_claims_are_recorded(client, acme, lead, reviewer, policy):
    memory = flagged(acme, policy)
    claim_take(memory=memory, user=lead)
    client.force_login(lead)

    response = client.post(
        f"/t/acme/memories/{memory.pk}/claim/reassign/",
        {"to": reviewer.pk, "view": "claim"},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 200
    assert held_claim(memory).holder == reviewer
    first = Claim.objects.filter(memory=memory).order_by("pk").first()
    assert (
        first.holder == lead
        and first.released_by == lead
        and "reassigned to acme-reviewer" in first.release_note
    )


def test_a_reviewer_cannot_reassign_and_nobody_can_hand_an_item_to_an_auditor(
    client, acme, lead, reviewer, auditor, policy
):
    memory = flagged(acme, policy)
    client.force_login(reviewer)
    assert (
        client.post(f"/t/acme/memories/{memory.pk}/claim/reassign/", {"to": reviewer.pk}).status_code == 403
    )

    with pytest.raises(ClaimError, match="not a reviewer"):
        claim_reassign(memory=memory, to=auditor, by=lead)
    assert not Claim.objects.exists()


def test_only_queue_items_can_be_claimed(acme, reviewer):
    with pytest.raises(ClaimError, match="only memories in the review queue"):
        claim_take(memory=make_memory(acme), user=reviewer)


def test_auditors_and_labelers_cannot_claim(client, acme, auditor, labeler, policy):
    memory = flagged(acme, policy)
    for user in (auditor, labeler):
        client.force_login(user)
        assert client.post(f"/t/acme/memories/{memory.pk}/claim/").status_code == 403
    assert not Claim.objects.exists()


def test_deciding_an_item_ends_its_claim(client, acme, reviewer, policy):
    memory = flagged(acme, policy)
    claim_take(memory=memory, user=reviewer)
    client.force_login(reviewer)

    client.post(
        f"/t/acme/memories/{memory.pk}/act/", {"action": "approve", "seen_version": memory.row_version}
    )

    claim = Claim.objects.get(memory=memory)
    assert claim.released_at is not None and claim.release_note == "the memory was decided (approve)"


def test_reassigning_to_someone_outside_the_tenant_is_a_404_that_names_nobody(
    client, acme, globex, lead, policy
):
    memory = flagged(acme, policy)
    outsider = make_user("globex-reviewer", globex, "reviewer")
    outsider.first_name = "Secret"
    outsider.save()
    stranger = make_user("stranger")
    client.force_login(lead)

    answers = [
        client.post(f"/t/acme/memories/{memory.pk}/claim/reassign/", {"to": to, "view": "claim"})
        for to in (outsider.pk, stranger.pk, "²", "")
    ]

    assert [a.status_code for a in answers] == [404, 404, 400, 404]  # "²" is no id: a 400 naming `to`
    assert not any(b"Secret" in a.content or b"stranger" in a.content for a in answers)
    assert not Claim.objects.exists()
