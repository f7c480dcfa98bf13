"""The agents' API: tokens, tenants, and bad input that writes nothing."""

import json

import pytest
from django.apps import apps
from django.test import override_settings

from memory_review.api import urls as api_urls
from memory_review.assessments.models import Assessment
from memory_review.assessments.services import policy_ensure_default
from memory_review.memories.models import Memory, SourceEvent
from memory_review.tenancy.tokens import token_create
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(acme, policy):
    return token_create(tenant=acme, name="support-bot")[1]


def post(client, path: str, body, token: str | None, *, raw: bytes | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = raw if raw is not None else json.dumps(body)
    return client.post(path, data=data, content_type="application/json", **headers)


def row_counts() -> dict[str, int]:
    return {m._meta.label: m.objects.count() for m in apps.get_models() if m._meta.app_label != "sessions"}


EVENT = {"text": "We moved production to eu-central-1 last night.", "source": "slack"}


def test_posting_an_event_answers_202_with_a_queued_assessment(client, token, acme):
    response = post(client, "/api/v1/t/acme/events", {**EVENT, "scope": {"user_id": "cust-1"}}, token)

    assert response.status_code == 202
    body = response.json()
    assessment = Assessment.objects.get(pk=body["assessment_id"])
    assert (assessment.state, assessment.event_id, assessment.purpose) == (
        "queued",
        body["event_id"],
        "invalidation",
    )
    assert SourceEvent.objects.get(pk=body["event_id"]).user_id == "cust-1"
    assert body["page_url"] == f"/t/acme/assessments/{assessment.pk}/"  # where a person watches it


def test_the_assessment_can_be_read_back_with_its_counts_and_cost(client, token, acme):
    body = post(client, "/api/v1/t/acme/events", EVENT, token).json()

    response = client.get(body["assessment_url"], HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code == 200
    data = response.json()
    assert data["state"] == "queued" and data["policy"] == "v1"
    assert data["counts"] == {
        "candidates": 0,
        "screened_out": 0,
        "verdicts": 0,
        "applied": 0,
        "by_disposition": {},
    }
    assert data["cost_usd"] == "0.00000000"


def test_a_memory_is_written_with_its_source(client, token, acme):
    event_id = post(client, "/api/v1/t/acme/events", EVENT, token).json()["event_id"]

    response = post(
        client,
        "/api/v1/t/acme/memories",
        {
            "content": "Production runs in eu-central-1.",
            "kind": "fact",
            "subject": "prod region",
            "source_event_id": event_id,
        },
        token,
    )

    assert response.status_code == 201
    memory = Memory.objects.get(pk=response.json()["memory_id"])
    assert (memory.source_event_id, memory.written_by, memory.status) == (event_id, "agent:agent", "active")


def test_a_second_live_memory_for_the_same_subject_is_a_conflict(client, token, acme):
    existing = make_memory(acme, subject="prod region")
    response = post(
        client,
        "/api/v1/t/acme/memories",
        {
            "content": "Prod is in eu-west-1.",
            "kind": "fact",
            "subject": "prod region",
            "source_event_id": existing.source_event_id,
        },
        token,
    )
    assert response.status_code == 409
    assert "already holds subject 'prod region'" in response.json()["error"]


def test_a_candidate_without_a_source_is_rejected_at_once(client, token, acme):
    response = post(
        client,
        "/api/v1/t/acme/candidates",
        {
            "claim": "Customers may return kettles after 60 days.",
            "kind": "policy",
            "subject": "returns",
            "source_event_id": None,
        },
        token,
    )
    assert response.status_code == 201
    assert response.json()["status"] == "rejected" and response.json()["check_failed"] == "missing_source"


@pytest.mark.parametrize(
    "path,body,raw,field",
    [
        ("events", None, b'{"text": "unfinished', "body"),
        ("events", None, b"[1, 2]", "body"),
        ("events", {"source": "slack"}, None, "text"),
        ("events", {"text": 42, "source": "slack"}, None, "text"),
        ("events", {"text": "   ", "source": "slack"}, None, "text"),
        ("events", {"text": "hi", "source": "carrier-pigeon"}, None, "source"),
        ("events", {**EVENT, "remember_successor": "yes"}, None, "remember_successor"),
        ("events", {**EVENT, "scope": {"team_id": "t-1"}}, None, "scope.team_id"),
        ("events", {**EVENT, "scope": {"user_id": ""}}, None, "scope.user_id"),
        ("events", {**EVENT, "priority": "high"}, None, "priority"),
        ("memories", {"content": "x", "kind": "rumour", "subject": "s", "source_event_id": 1}, None, "kind"),
        (
            "memories",
            {"content": "x", "kind": "fact", "subject": "s", "source_event_id": "1"},
            None,
            "source_event_id",
        ),
        (
            "memories",
            {"content": "x", "kind": "fact", "subject": "s", "source_event_id": 999999},
            None,
            "source_event_id",
        ),
        ("memories", {"content": "x", "kind": "fact", "subject": "s"}, None, "source_event_id"),
        (
            "memories",
            {"content": "x", "kind": "fact", "subject": "s", "source_event_id": 1, "confidence": 2},
            None,
            "confidence",
        ),
        ("candidates", {"claim": "x", "kind": "fact", "subject": "s"}, None, "source_event_id"),
        ("events", {**EVENT, "occurred_at": "2026-11-29T10:00:00"}, None, "occurred_at"),
        ("events", {**EVENT, "occurred_at": "0001-01-01T00:00:00+05:00"}, None, "occurred_at"),
        ("events", {**EVENT, "occurred_at": "yesterday"}, None, "occurred_at"),
        ("events", {"text": "nul \u0000 inside", "source": "chat"}, None, "text"),
        ("events", {**EVENT, "scope": {"user_id": "cust\u00001"}}, None, "scope.user_id"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(client, token, acme, path, body, raw, field):
    before = row_counts()

    response = post(client, f"/api/v1/t/acme/{path}", body, token, raw=raw)

    assert response.status_code == 400
    assert field in response.json()["fields"], response.json()
    assert row_counts() == before


@override_settings(API_MAX_TEXT_CHARS=100)
def test_text_over_the_configured_size_is_refused(client, token):
    before = row_counts()
    response = post(client, "/api/v1/t/acme/events", {"text": "x" * 101, "source": "chat"}, token)
    assert response.status_code == 400
    assert response.json()["fields"]["text"] == "is 101 characters; the limit is 100"
    assert row_counts() == before


def test_a_body_that_is_not_json_is_refused(client, token):
    response = client.post(
        "/api/v1/t/acme/events",
        data="text=hi",
        content_type="text/plain",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400
    assert "Content-Type: application/json" in response.json()["fields"]["body"]


@pytest.mark.parametrize("header", [None, "Bearer nope", "Bearer mr_abcd1234_wrong", "Basic dXNlcjpwYXNz"])
def test_a_missing_or_wrong_token_is_a_401_and_writes_nothing(client, token, header):
    before = row_counts()
    headers = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.post(
        "/api/v1/t/acme/events", data=json.dumps(EVENT), content_type="application/json", **headers
    )
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert row_counts() == before


def test_another_tenants_token_gets_a_404(client, globex, acme, policy):
    globex_token = token_create(tenant=globex, name="ops-bot")[1]
    before = row_counts()

    response = post(client, "/api/v1/t/acme/events", EVENT, globex_token)

    assert response.status_code == 404
    assert row_counts() == before


def test_another_tenants_assessment_is_a_404(client, token, globex):
    theirs = Assessment.objects.create(
        tenant=globex,
        purpose="invalidation",
        policy=policy_ensure_default(tenant=globex, created_by="t"),
        question_set_version="q",
    )
    response = client.get(f"/api/v1/t/acme/assessments/{theirs.pk}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 404


def test_the_openapi_schema_describes_the_endpoints_and_their_inputs(client):
    schema = client.get("/api/v1/openapi.json").json()

    assert schema["openapi"].startswith("3.")
    served = {
        "/api/v1/"
        + str(p.pattern)
        .replace("<slug:slug>", "{slug}")
        .replace("<id:pk>", "{id}")
        .replace("<id:delivery>", "{delivery}")
        for p in api_urls.urlpatterns
        if p.name != "api-openapi"
    }
    assert set(schema["paths"]) == served  # every endpoint the API serves, and none it does not
    assert {"get", "post"} == set(schema["paths"]["/api/v1/t/{slug}/memories"])
    feed = {p["name"]: p for p in schema["paths"]["/api/v1/t/{slug}/changes"]["get"]["parameters"]}
    assert feed["after"]["required"] and not feed["wait"]["required"]
    assert {"text", "source"} <= set(schema["components"]["schemas"]["EventIn"]["required"])
    assert "responses" in schema["components"]["schemas"]["ReceiptsIn"]["required"]
    assert {"get", "patch", "delete"} == set(schema["paths"]["/api/v1/t/{slug}/webhooks/{id}"])
    assert schema["components"]["schemas"]["WebhookIn"]["required"] == ["url"]


def test_tokens_are_stored_hashed(acme):
    row, token = token_create(tenant=acme, name="bot")
    assert token not in (row.token_hash, row.prefix)
    assert token.startswith(f"mr_{row.prefix}_")


def test_an_event_with_a_time_zone_is_recorded_at_that_moment(client, token):
    body = post(
        client, "/api/v1/t/acme/events", {**EVENT, "occurred_at": "2026-11-29T10:00:00+01:00"}, token
    ).json()
    assert SourceEvent.objects.get(pk=body["event_id"]).occurred_at.isoformat() == "2026-11-29T09:00:00+00:00"


def test_a_tenant_without_an_active_policy_gets_a_409_and_nothing_is_written(client, globex):
    globex_token = token_create(tenant=globex, name="ops-bot")[1]
    before = row_counts()

    response = post(client, "/api/v1/t/globex/events", EVENT, globex_token)

    assert response.status_code == 409
    assert "no active policy" in response.json()["error"]
    assert row_counts() == before


def test_not_found_is_json_too(client, token):
    response = client.get("/api/v1/t/acme/assessments/999999", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 404
    assert response.json() == {"error": "not found"}


def test_an_assessment_of_many_memories_pages_its_verdicts_and_counts_them_all(client, token, acme, policy):
    """An event that bears on thousands of memories answers a page at a time (issue 17)."""
    from memory_review.assessments.models import Verdict
    from tests.factories import judged

    first = judged(make_memory(acme, subject="one"), policy, disposition="confirmed")
    for subject, disposition in (("two", "uncertain"), ("three", "confirmed")):
        memory = make_memory(acme, subject=subject)
        Verdict.objects.create(
            tenant=acme, assessment=first.assessment, memory=memory, event=first.event,
            row_version=memory.row_version, disposition=disposition, bears=0.9, still_true=0.5,
        )  # fmt: skip
    url = f"/api/v1/t/acme/assessments/{first.assessment_id}"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    page = client.get(f"{url}?limit=2", **auth).json()
    rest = client.get(f"{url}?limit=2&after={page['next_after']}", **auth).json()
    assert [v["subject"] for v in page["verdicts"]] == ["one", "two"]
    assert [v["subject"] for v in rest["verdicts"]] == ["three"] and rest["next_after"] is None
    three = Verdict.objects.get(assessment=first.assessment, memory__subject="three")
    assert rest["verdicts"][0] == {
        "memory_id": three.memory_id, "subject": "three", "disposition": "confirmed",
        "votes": {"bears": 0.9, "still_true": 0.5, "replaces": None, "partial": None, "hypothetical": None,
                  "directive": None},
        "proposed_status": three.proposed_status, "applied": False, "memory_status": three.memory.status,
        "shadow_disposition": None,
    }  # fmt: skip
    expected = {"verdicts": 3, "applied": 0, "by_disposition": {"confirmed": 2, "uncertain": 1}}
    assert {k: page["counts"][k] for k in expected} == expected == {k: rest["counts"][k] for k in expected}

    for bad in ("limit=0", "limit=501", "after=-1", "after=x", "page=2"):
        refused = client.get(f"{url}?{bad}", **auth)
        assert refused.status_code == 400 and bad.split("=")[0] in refused.json()["fields"], bad
