"""Many events in one POST (issue 30, item 3): each checked and named by its place, all recorded
in one transaction or none, each charged to the token's rate."""

import json
import time

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from memory_review.agents.models import Receipt
from memory_review.api import schemas
from memory_review.assessments.invalidation import observe_events
from memory_review.assessments.models import Assessment
from memory_review.audit import verification
from memory_review.integrity import seals
from memory_review.memories.models import SourceEvent
from memory_review.memories.services import event_record
from memory_review.tenancy.tokens import token_create
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

BATCH = "/api/v1/t/acme/events/batch"


@pytest.fixture
def token(acme, policy):
    return token_create(tenant=acme, name="fleet-bot")[1]


def post(client, token, body):
    return client.post(
        BATCH, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def events(n: int) -> list[dict]:
    return [{"text": f"Customer {i} moved to the annual plan.", "source": "chat"} for i in range(n)]


def written() -> tuple[int, int, int]:
    return SourceEvent.objects.count(), Assessment.objects.count(), Receipt.objects.count()


def test_a_batch_records_every_event_in_order_and_queues_each_assessment(client, token, acme):
    body = events(3)
    body[1]["scope"] = {"user_id": "cust-1"}

    response = post(client, token, {"events": body})

    assert response.status_code == 202
    answers = response.json()["events"]
    assert [SourceEvent.objects.get(pk=a["event_id"]).text for a in answers] == [e["text"] for e in body]
    assert SourceEvent.objects.get(pk=answers[1]["event_id"]).user_id == "cust-1"
    for answer in answers:
        assessment = Assessment.objects.get(pk=answer["assessment_id"])
        assert (assessment.state, assessment.event_id, answer["state"]) == (
            "queued",
            answer["event_id"],
            "queued",
        )
        assert answer["assessment_url"] == f"/api/v1/t/acme/assessments/{assessment.pk}"


def test_a_batch_writes_its_events_and_its_assessments_in_one_insert_each_sealed_and_verified(
    client, token, acme
):
    """Ten events cost the statements two do: one INSERT of the events and one of their
    assessments, each sealed by one ledger statement, one read of the policy."""
    assert post(client, token, {"events": events(1)}).status_code == 202  # a tenant's first write makes more
    counts = {}
    for n in (2, 10):
        with CaptureQueriesContext(connection) as run:
            assert post(client, token, {"events": events(n)}).status_code == 202
        statements = [q["sql"] for q in run.captured_queries]
        counts[n] = len(statements)
        inserts = [sql for sql in statements if sql.startswith("INSERT INTO")]
        assert sum('"memories_sourceevent"' in sql for sql in inserts) == 1
        assert sum('"assessments_assessment"' in sql for sql in inserts) == 1
        assert sum("policyversion" in sql for sql in statements) == 1
    assert counts[10] == counts[2], counts

    assert SourceEvent.objects.count() == Assessment.objects.count() == 13
    for model in (SourceEvent, Assessment):
        assert all(seals.unchanged(model, pk) for pk in model.objects.values_list("pk", flat=True))
    assert verification.problem_in(acme) is None


def test_deferred_a_batchs_events_and_assessments_are_sealed_by_one_ledger_insert(
    client, token, acme, settings
):
    """As production runs (AUDIT_SEQUENCER=deferred): the two INSERTs' seals wait for the
    sequencer, written together as the intake ends (seals.ledger_batch)."""
    settings.AUDIT_SEQUENCER = "deferred"
    assert post(client, token, {"events": events(1)}).status_code == 202
    with CaptureQueriesContext(connection) as run:
        assert post(client, token, {"events": events(10)}).status_code == 202

    assert sum(q["sql"].startswith('INSERT INTO "audit_seal"') for q in run.captured_queries) == 1
    for model in (SourceEvent, Assessment):
        assert all(seals.unchanged(model, pk) for pk in model.objects.values_list("pk", flat=True))
    assert verification.problem_in(acme) is None  # waiting, each as it was written


def test_each_event_of_a_batch_keeps_its_own_remember_successor(client, token, acme):
    body = events(3)
    body[1]["remember_successor"] = True

    answers = post(client, token, {"events": body}).json()["events"]

    assert [Assessment.objects.get(pk=a["assessment_id"]).remember_successor for a in answers] == [
        False,
        True,
        False,
    ]


def test_events_of_two_tenants_are_not_observed_under_one_policy(acme, globex, policy):
    mixed = [event_record(tenant=tenant, source="chat", text="Moved to annual.") for tenant in (acme, globex)]

    with pytest.raises(ValueError, match="one tenant"):
        observe_events(mixed, remember_successor=[False, False])
    assert Assessment.objects.count() == 0


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda body: body[1].pop("source"), "events.1.source"),
        (lambda body: body[2].update(text=""), "events.2.text"),
        (lambda body: body[0].update(colour="red"), "events.0.colour"),
        (lambda body: body[1].update(occurred_at="2026-11-29T10:00:00"), "events.1.occurred_at"),
    ],
)
def test_one_bad_event_is_named_by_its_place_and_none_is_recorded(client, token, acme, change, field):
    body = events(3)
    change(body)
    before = written()

    response = post(client, token, {"events": body})

    assert response.status_code == 400
    assert field in response.json()["fields"], response.json()
    assert written() == before


@pytest.mark.parametrize("n", [0, schemas.EVENTS_A_BATCH + 1])
def test_an_empty_batch_or_one_past_the_limit_is_refused(client, token, n):
    response = post(client, token, {"events": events(n)})

    assert response.status_code == 400 and "events" in response.json()["fields"]
    assert SourceEvent.objects.count() == 0


def test_a_receipt_naming_a_version_the_memory_does_not_hold_names_its_event_and_records_nothing(
    client, token, acme
):
    memory = make_memory(acme, subject="plan")
    body = events(2)
    used = {
        "response_id": "r-1",
        "used_at": "2026-12-04T10:00:00Z",
        "memories": [{"id": memory.pk, "version": 1}],
    }
    body[0]["receipts"] = [used]
    body[1]["receipts"] = [{**used, "response_id": "r-2", "memories": [{"id": memory.pk, "version": 7}]}]
    before = written()

    response = post(client, token, {"events": body})

    assert response.status_code == 400
    assert response.json()["fields"] == {
        "events.1.receipts.0.memories.0.version": f"memory {memory.pk} holds content version 1, not 7"
    }
    assert written() == before


def test_the_receipts_of_each_event_are_recorded_with_it(client, token, acme):
    memory = make_memory(acme, subject="plan")
    body = events(2)
    body[1]["receipts"] = [
        {
            "response_id": "r-9",
            "used_at": "2026-12-04T10:00:00Z",
            "memories": [{"id": memory.pk, "version": 1}],
        }
    ]

    assert post(client, token, {"events": body}).status_code == 202
    assert list(Receipt.objects.values_list("response_id", "memory_id")) == [("r-9", memory.pk)]


@override_settings(API_RATE_PER_MINUTE=3)
def test_each_event_of_a_batch_is_charged_to_the_rate_and_a_batch_over_it_records_nothing(
    client, token, acme
):
    left = 60 - time.time() % 60  # the count is per clock minute: start early in one
    if left < 15:
        time.sleep(left + 0.05)

    refused = post(client, token, {"events": events(4)})

    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert SourceEvent.objects.count() == 0
    other = token_create(tenant=acme, name="other-bot")[1]
    assert post(client, other, {"events": events(3)}).status_code == 202
    assert post(client, other, {"events": events(1)}).status_code == 429  # its three are spent
    assert SourceEvent.objects.count() == 3


def test_the_batch_is_in_the_openapi_document(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]

    assert "/api/v1/t/{slug}/events/batch" in paths
    assert paths["/api/v1/t/{slug}/events/batch"]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ] == {"$ref": "#/components/schemas/EventBatchIn"}
