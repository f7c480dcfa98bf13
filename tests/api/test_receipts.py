"""Usage receipts (issue 16, item 4): agents report which memories their responses used; a lead
sees which responses a wrong memory fed, and can export them."""

import csv
import io
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memory_review.agents import receipts
from memory_review.agents.models import Receipt
from memory_review.audit import verification
from memory_review.compliance.erasure import erase_subject
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.memories.services import ERASED
from memory_review.tenancy.tokens import token_create
from memory_review.workflow.decisions import memory_rewrite
from tests.factories import around_the_application, make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(acme, policy):
    return token_create(tenant=acme, name="support-bot")[1]


def post(client, path, body, token):
    return client.post(
        path, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def response(rid: str, memories, *, at=None, user="cust-1", thread="t-1"):
    at = at or timezone.now()
    return {
        "response_id": rid,
        "used_at": at.isoformat(),
        "scope": {"user_id": user, "thread_id": thread},
        "memories": [{"id": m.pk, "version": m.version} for m in memories],
    }


def test_a_batch_is_recorded_one_row_a_memory_and_sealed(client, acme, token):
    first, second = make_memory(acme), make_memory(acme)

    answer = post(
        client,
        "/api/v1/t/acme/receipts",
        {"responses": [response("r-1", [first, second]), response("r-2", [first])]},
        token,
    )

    assert answer.status_code == 201 and answer.json() == {"recorded": 3, "already_recorded": 0}
    rows = list(
        Receipt.objects.order_by("pk").values_list("memory_id", "response_id", "user_id", "thread_id")
    )
    assert rows == [
        (first.pk, "r-1", "cust-1", "t-1"),
        (second.pk, "r-1", "cust-1", "t-1"),
        (first.pk, "r-2", "cust-1", "t-1"),
    ]
    assert verification.problem_in(acme) is None


def test_receipts_can_ride_with_the_next_event(client, acme, token):
    memory = make_memory(acme)
    event = {"text": "Thanks, that worked.", "source": "chat", "receipts": [response("r-9", [memory])]}

    answer = post(client, "/api/v1/t/acme/events", event, token)

    assert answer.status_code == 202
    assert list(Receipt.objects.values_list("response_id", flat=True)) == ["r-9"]


def test_a_version_the_memory_does_not_hold_is_a_400_naming_it_and_nothing_is_written(client, acme, token):
    good, wrong = make_memory(acme), make_memory(acme)
    body = response("r-1", [good, wrong])
    body["memories"][1]["version"] = 3

    answer = post(client, "/api/v1/t/acme/receipts", {"responses": [body]}, token)

    assert answer.status_code == 400
    assert answer.json()["fields"] == {
        "responses.0.memories.1.version": f"memory {wrong.pk} holds content version 1, not 3"
    }
    assert not Receipt.objects.exists()


def test_a_receipt_naming_another_tenants_memory_is_a_404_and_nothing_is_written(client, acme, globex, token):
    ours, theirs = make_memory(acme), make_memory(globex)

    answer = post(
        client,
        "/api/v1/t/acme/receipts",
        {"responses": [response("r-1", [ours]), response("r-2", [theirs])]},
        token,
    )
    event = post(
        client,
        "/api/v1/t/acme/events",
        {"text": "Hi.", "source": "chat", "receipts": [response("r-3", [theirs])]},
        token,
    )

    assert answer.status_code == 404 and event.status_code == 404
    assert not Receipt.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"responses": []}, "responses"),
        (
            {"responses": [{"response_id": "r", "used_at": "2026-12-01T10:00:00Z", "memories": []}]},
            "responses.0.memories",
        ),
        (
            {
                "responses": [
                    {
                        "response_id": "r",
                        "used_at": "2026-12-01T10:00:00",
                        "memories": [{"id": 1, "version": 1}],
                    }
                ]
            },
            "responses.0.used_at",
        ),
        (
            {"responses": [{"response_id": "r", "used_at": "2026-12-01T10:00:00Z", "memories": [{"id": 1}]}]},
            "responses.0.memories.0.version",
        ),
        ({"responses": [], "extra": 1}, "extra"),
    ],
)
def test_a_malformed_batch_is_a_400_naming_the_field(client, acme, token, body, field):
    answer = post(client, "/api/v1/t/acme/receipts", body, token)

    assert answer.status_code == 400 and field in answer.json()["fields"]
    assert not Receipt.objects.exists()


# -- what a lead sees ---------------------------------------------------------------------------


def killed_after_three_uses(acme, lead, token, client):
    """A memory used twice, then found wrong by a person's decision, then used once more."""
    memory = make_memory(acme, content="Ships on Fridays.")
    before = timezone.now() - timedelta(hours=2)
    post(
        client,
        "/api/v1/t/acme/receipts",
        {
            "responses": [
                response("early-1", [memory], at=before),
                response("early-2", [memory], at=before + timedelta(minutes=1)),
            ]
        },
        token,
    )
    transition(
        obj=memory,
        action="contradict",
        actor=Actor.user(lead),
        reason="ships on Mondays now",
        seen_version=memory.row_version,
    )
    post(
        client,
        "/api/v1/t/acme/receipts",
        {"responses": [response("late-1", [memory], user="cust-7", thread="t-9")]},
        token,
    )
    return memory


def test_the_memory_page_counts_its_uses_and_those_while_it_was_wrong(client, acme, lead, token):
    memory = killed_after_three_uses(acme, lead, token, client)
    client.force_login(lead)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    assert "Used in <strong>3 responses</strong>" in page
    assert "1 response used it while it was wrong" in page
    assert "from the decision that took it out of force" in page
    assert "late-1" in page and "cust-7" in page
    assert page.count('class="wrong"') == 1  # only the response after the decision is marked


def test_a_lead_sets_when_it_became_wrong_and_exports_those_responses(client, acme, lead, token):
    memory = killed_after_three_uses(acme, lead, token, client)
    client.force_login(lead)
    since = (timezone.now() - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")

    page = client.get(f"/t/acme/memories/{memory.pk}/?wrong_since={since}").content.decode()
    export = client.get(f"/t/acme/memories/{memory.pk}/responses.csv?wrong_since={since}")
    default = client.get(f"/t/acme/memories/{memory.pk}/responses.csv")

    assert "3 responses used it while it was wrong" in page and "from the time you set" in page
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert [r["response_id"] for r in rows] == ["early-1", "early-2", "late-1"]
    assert (rows[2]["user_id"], rows[2]["thread_id"]) == ("cust-7", "t-9")
    assert [
        r["response_id"] for r in csv.DictReader(io.StringIO(b"".join(default.streaming_content).decode()))
    ] == ["late-1"]


def test_a_large_export_of_those_responses_is_written_by_a_job_holding_what_the_stream_holds(
    client, acme, lead, token, settings, tmp_path
):
    from memory_review.jobfiles import services
    from memory_review.jobfiles.models import JobFile

    settings.STORAGES = {**settings.STORAGES, "jobfiles": {"OPTIONS": {"location": tmp_path}, "BACKEND": (
        "django.core.files.storage.FileSystemStorage")}}  # fmt: skip
    settings.EXPORT_JOB_ABOVE_ROWS = 2
    memory = killed_after_three_uses(acme, lead, token, client)
    client.force_login(lead)
    since = (timezone.now() - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")

    asked = client.post(f"/t/acme/memories/{memory.pk}/responses.csv", {"wrong_since": since})
    job = JobFile.objects.get()
    assert asked.url == f"/t/acme/exports/{job.pk}/" and job.kind == "responses.csv"
    assert services.job_file_produce(acme.pk, job.pk) == "done"

    written = b"".join(client.get(f"/t/acme/exports/{job.pk}/download/").streaming_content)
    streamed = b"".join(
        client.get(f"/t/acme/memories/{memory.pk}/responses.csv?wrong_since={since}").streaming_content
    )
    assert written == streamed
    assert [r["response_id"] for r in csv.DictReader(io.StringIO(written.decode()))] == [
        "early-1", "early-2", "late-1",
    ]  # fmt: skip


def test_a_bad_time_is_a_400_naming_it_and_a_reviewer_cannot_export(client, acme, lead, reviewer, token):
    memory = killed_after_three_uses(acme, lead, token, client)
    standing = make_memory(acme)
    client.force_login(lead)
    bad = client.get(f"/t/acme/memories/{memory.pk}/?wrong_since=soon")
    unset = client.get(f"/t/acme/memories/{standing.pk}/responses.csv")
    client.force_login(reviewer)
    refused = client.get(f"/t/acme/memories/{memory.pk}/responses.csv")

    assert bad.status_code == 400 and "wrong_since" in bad.content.decode()
    assert unset.status_code == 400 and "this memory still stands" in unset.content.decode()
    assert refused.status_code == 403


def test_a_rewritten_memory_was_wrong_from_the_evidence_of_its_successor(client, acme, lead, token):
    old = make_memory(acme, subject="plan", content="On the basic plan.")
    post(client, "/api/v1/t/acme/receipts", {"responses": [response("r-1", [old])]}, token)
    transition(
        obj=old, action="flag", actor=Actor.policy("v1"), reason="new evidence", seen_version=old.row_version
    )
    outcome = memory_rewrite(
        memory=old, user=lead, content="On the pro plan.", reason="upgraded", seen_version=old.row_version,
        can_lead=True,
    )  # fmt: skip
    client.force_login(lead)

    page = client.get(f"/t/acme/memories/{old.pk}/").content.decode()
    usage = receipts.usage(Memory.objects.get(pk=old.pk))

    assert usage.wrong_since == outcome.successor.source_event.occurred_at
    assert "from the evidence of the version that replaced it" in page
    assert f"{usage.while_wrong} response" in page


def test_the_audit_lineage_says_what_the_memory_fed(client, acme, lead, auditor, token):
    memory = killed_after_three_uses(acme, lead, token, client)
    client.force_login(auditor)

    page = client.get(f"/t/acme/audit/memories/{memory.pk}/").content.decode()

    assert "Agents report 3 responses that used it" in page and "1 used it while it was wrong" in page


# -- tenant data ------------------------------------------------------------------------------------


def test_an_erasure_blanks_whom_the_responses_answered_and_the_trail_still_verifies(client, acme, token):
    theirs = make_memory(acme, user_id="cust-1")
    shared = make_memory(acme)
    post(
        client,
        "/api/v1/t/acme/receipts",
        {"responses": [response("r-1", [theirs, shared]), response("r-2", [shared], user="cust-2")]},
        token,
    )

    erase_subject(tenant=acme, user_id="cust-1", reason="GDPR request", requested_by="user:1")

    erased = Receipt.objects.filter(erased_at__isnull=False).order_by("memory_id")
    assert list(erased.values_list("memory_id", "response_id", "user_id", "agent_id", "thread_id")) == [
        (theirs.pk, ERASED, None, None, None),
        (shared.pk, ERASED, None, None, None),  # r-1 answered cust-1, whatever memory it used
    ]
    assert not Receipt.objects.filter(response_id="r-1").exists()
    kept = Receipt.objects.get(response_id="r-2")
    assert (kept.user_id, kept.erased_at) == ("cust-2", None)
    assert verification.problem_in(acme) is None


def test_a_receipt_removed_around_the_application_is_reported(client, acme, token):
    memory = make_memory(acme)
    post(client, "/api/v1/t/acme/receipts", {"responses": [response("r-1", [memory])]}, token)
    row = Receipt.objects.get()
    with around_the_application() as cursor:
        cursor.execute("DELETE FROM agents_receipt WHERE id = %s", [row.pk])

    assert f"receipt {row.pk} was deleted around the application" in str(verification.problem_in(acme))
