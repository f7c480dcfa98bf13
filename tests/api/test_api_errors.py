"""Every API failure is JSON an agent can parse (an unknown URL, a wrong method, a body over the
limit), and each token has a rate limit that answers 429 with Retry-After."""

import json
import time

import pytest
from django.test import override_settings

from memory_review.memories.models import SourceEvent
from memory_review.tenancy.tokens import token_create

pytestmark = pytest.mark.django_db

EVENT = {"text": "We moved production to eu-central-1 last night.", "source": "slack"}


@pytest.fixture
def token(acme, policy):
    return token_create(tenant=acme, name="support-bot")[1]


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_an_unknown_api_url_is_a_json_404(client, token):
    response = client.get("/api/v1/t/acme/no-such-thing", **auth(token))

    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"] == "not found"


def test_a_wrong_method_is_a_json_405_listing_the_allowed_ones(client, token):
    response = client.put("/api/v1/t/acme/events", data="{}", content_type="application/json", **auth(token))

    assert response.status_code == 405
    assert response.json()["allowed_methods"] == ["POST"]
    assert response["Allow"] == "POST"


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000)
def test_a_body_over_the_limit_is_a_json_413_and_writes_nothing(client, token):
    body = json.dumps({**EVENT, "text": "x" * 20_000})

    response = client.post("/api/v1/t/acme/events", data=body, content_type="application/json", **auth(token))

    assert response.status_code == 413
    assert response.json() == {
        "error": "request body too large: the limit is 10000 bytes",
        "fields": {"body": "too large"},
    }
    assert SourceEvent.objects.count() == 0


def test_a_crash_is_a_json_500_with_the_request_id_and_no_trace(client, token, monkeypatch):
    from memory_review.api import views

    def explode(*args, **kwargs):
        raise RuntimeError("secret detail that must not leak")

    monkeypatch.setattr(views.intake, "record_events", explode)
    client.raise_request_exception = False

    response = client.post(
        "/api/v1/t/acme/events", data=json.dumps(EVENT), content_type="application/json", **auth(token)
    )

    assert response.status_code == 500
    body = response.json()
    assert body["error"] == "internal server error"
    assert body["request_id"] == response["X-Request-ID"]
    assert b"secret detail" not in response.content


@override_settings(API_RATE_PER_MINUTE=3)
def test_a_token_over_its_rate_is_told_when_to_come_back_and_nothing_is_written(client, token, acme):
    other = token_create(tenant=acme, name="other-bot")[1]
    # The count is per clock minute (api/throttle.py): five requests that straddle a minute's
    # end are two minutes' counts. Start early in a minute (CI once began 1 s before one ended).
    left = 60 - time.time() % 60
    if left < 15:
        time.sleep(left + 0.05)
    statuses = [
        client.post(
            "/api/v1/t/acme/events", data=json.dumps(EVENT), content_type="application/json", **auth(token)
        ).status_code
        for _ in range(4)
    ]

    refused = client.post(
        "/api/v1/t/acme/events", data=json.dumps(EVENT), content_type="application/json", **auth(token)
    )

    assert statuses[:3] == [202, 202, 202] and statuses[3] == 429
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"] == "rate limit: 3 requests a minute per token"
    assert SourceEvent.objects.count() == 3
    other_response = client.get("/api/v1/t/acme/memories", **auth(other))
    assert other_response.status_code != 429  # another token has its own count
