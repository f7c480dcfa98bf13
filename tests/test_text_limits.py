"""Lengths are counted as Oracle's NVARCHAR2 counts them (UTF-16 units): an emoji is two. What
would fail there with ORA-12899 is a 400 naming the field everywhere, and nothing is written."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, SourceEvent
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.tokens import token_create
from memory_review.textlimits import fit, units
from tests.factories import make_memory, memory_in

EMOJI = "\N{GRINNING FACE}"  # one code point, two UTF-16 units


def test_units_count_as_utf16_does():
    assert units("abc") == 3
    assert units("é") == 1  # inside the Basic Multilingual Plane: one unit
    assert units(EMOJI * 3) == 6


def test_fit_cuts_to_the_limit_without_splitting_a_character():
    assert fit("a" + EMOJI * 3, 4) == "a" + EMOJI  # 5 units would split the second emoji: dropped
    assert fit(EMOJI * 3, 6) == EMOJI * 3
    assert fit("plain", 3) == "pla"


@pytest.fixture
def token(acme, policy):
    return token_create(tenant=acme, name="support-bot")[1]


def post(client, token, path, body):
    return client.post(
        path, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


@pytest.mark.django_db
def test_an_api_subject_of_101_emoji_is_a_400_naming_it_and_writes_nothing(client, token, acme):
    event = post(
        client, token, "/api/v1/t/acme/events", {"text": "Customer prefers email.", "source": "chat"}
    )
    event_id = event.json()["event_id"]
    memories = Memory.objects.count()

    response = post(
        client,
        token,
        "/api/v1/t/acme/memories",
        {
            "content": "Prefers email.",
            "kind": "preference",
            "subject": EMOJI * 101,
            "source_event_id": event_id,
        },
    )

    assert response.status_code == 400
    message = response.json()["fields"]["subject"]
    assert (
        message.startswith("is 202 characters long as the database counts them") and "limit is 200" in message
    )
    assert "emoji" in message
    assert Memory.objects.count() == memories


@pytest.mark.django_db
def test_100_emoji_fit_exactly(client, token, acme):
    event_id = post(client, token, "/api/v1/t/acme/events", {"text": "x", "source": "chat"}).json()[
        "event_id"
    ]

    response = post(
        client,
        token,
        "/api/v1/t/acme/memories",
        {
            "content": "Prefers email.",
            "kind": "preference",
            "subject": EMOJI * 100,
            "source_event_id": event_id,
        },
    )

    assert response.status_code == 201, response.json()


@pytest.mark.django_db
def test_a_scope_id_over_the_limit_in_utf16_is_a_400(client, token, acme):
    response = post(
        client,
        token,
        "/api/v1/t/acme/events",
        {"text": "x", "source": "chat", "scope": {"user_id": EMOJI * 65}},
    )

    assert response.status_code == 400
    assert "limit is 128" in response.json()["fields"]["scope.user_id"]
    assert SourceEvent.objects.count() == 0


@pytest.mark.django_db
def test_a_reviewers_reason_over_the_limit_in_utf16_is_a_400_and_nothing_moves(acme, lead):
    memory = memory_in(acme, "needs_review")
    client = Client()
    client.force_login(lead)

    response = client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {"action": "approve", "reason": EMOJI * 501, "seen_version": memory.row_version},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 400
    assert "limit is 1000" in response.content.decode()
    assert Memory.objects.get(pk=memory.pk).status == "needs_review"


@pytest.mark.django_db
def test_model_fields_refuse_it_too_so_the_admin_does(acme):
    tenant = Tenant(slug="emoji", name=EMOJI * 61)  # name is 120

    with pytest.raises(ValidationError) as refused:
        tenant.full_clean()

    assert "limit is 120" in str(refused.value.message_dict["name"])


@pytest.mark.django_db
def test_a_transition_reason_is_cut_to_what_the_column_holds_without_a_broken_character(acme):
    memory = make_memory(acme)

    move = transition(
        obj=memory,
        action="freeze",
        actor=Actor("user", "1"),
        reason=EMOJI * 600,
        seen_version=memory.row_version,
    )

    assert move.reason == EMOJI * 500 and units(move.reason) == 1000
