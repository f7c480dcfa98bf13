"""Exports as files written by a job (issue 17, item 5): a small export asked for on a page
downloads at once; a large one is queued, a worker writes it through the storage, its page
follows the progress and hands the file over; expired files are removed and their records kept.

The worker's part runs in-process here (the service the task calls); tests/test_job_files_worker.py
runs it through a real Celery worker on Redis."""

import csv
import hashlib
import io
import json
import os
import tracemalloc
from datetime import timedelta

import pytest
from django.utils import timezone

from memory_review.jobfiles import services
from memory_review.jobfiles.models import JobFile
from memory_review.lifecycle import Actor, transition
from tests.factories import flagged, long_trail

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def job_files_dir(settings, tmp_path):
    """Each test's files in a folder of its own, and a small threshold so a few rows make a job."""
    folder = tmp_path / "jobfiles"
    settings.STORAGES = {
        **settings.STORAGES,
        "jobfiles": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": folder},
        },
    }
    settings.EXPORT_JOB_ABOVE_ROWS = 2
    return folder


@pytest.fixture
def trail(acme, lead, policy):
    memories = [flagged(acme, policy, subject=f"fact {i}") for i in range(3)]
    for memory in memories[:2]:
        transition(obj=memory, action="approve", actor=Actor.user(lead), reason="checked", seen_version=2)
    return memories  # five moves: three flags, two approvals


def downloaded(response) -> bytes:
    return b"".join(response.streaming_content)


def rows_of(jsonl: bytes) -> list[dict]:
    return [json.loads(line) for line in jsonl.decode().splitlines()[1:]]  # after the header line


def produce(job: JobFile) -> JobFile:
    """What the Celery task does with the job's ids."""
    assert services.job_file_produce(job.tenant_id, job.pk) == "done"
    return JobFile.objects.get(pk=job.pk)


def test_a_small_export_asked_for_on_the_page_downloads_at_once(client, auditor, trail, settings):
    settings.EXPORT_JOB_ABOVE_ROWS = 100
    client.force_login(auditor)

    response = client.post("/t/acme/audit/export.jsonl")

    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment")
    assert len(rows_of(downloaded(response))) == 5
    assert not JobFile.objects.exists()


def test_a_large_export_is_queued_and_its_page_follows_it_until_the_file_is_ready(
    client, auditor, trail, django_capture_on_commit_callbacks
):
    client.force_login(auditor)

    with django_capture_on_commit_callbacks() as queued:
        response = client.post("/t/acme/audit/export.jsonl")
    job = JobFile.objects.get()
    assert response.status_code == 302 and response.url == f"/t/acme/exports/{job.pk}/"
    assert len(queued) == 1  # the worker is told once the row is committed
    page = client.get(response.url).content.decode()
    assert "queued" in page and 'hx-trigger="every 2s"' in page
    assert f'href="/t/acme/exports/{job.pk}/">refresh</a>' in page  # without JavaScript too

    produce(job)

    region = client.get(response.url, HTTP_HX_REQUEST="true").content.decode()
    assert region.lstrip().startswith('<section id="progress"') and "hx-trigger" not in region  # stops
    assert "done" in region and f"/t/acme/exports/{job.pk}/download/" in region


def test_the_file_holds_what_the_stream_holds_with_its_size_and_checksum(client, auditor, trail):
    client.force_login(auditor)
    job = JobFile.objects.get(pk=client.post("/t/acme/audit/export.jsonl").url.split("/")[-2])

    job = produce(job)
    response = client.get(f"/t/acme/exports/{job.pk}/download/")
    body = b"".join(response.streaming_content)

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="audit-acme.jsonl"'
    assert (job.state, job.rows, job.size) == ("done", 5, len(body))
    assert job.sha256 == hashlib.sha256(body).hexdigest()
    assert rows_of(body) == rows_of(downloaded(client.get("/t/acme/audit/export.jsonl")))
    assert job.expires_at - job.finished_at == timedelta(hours=24)


def test_the_filters_asked_for_are_the_files_filters(client, auditor, trail):
    client.force_login(auditor)
    client.post("/t/acme/audit/export.csv", {"action": "flag"})  # three flags: over two

    job = produce(JobFile.objects.get())

    assert job.params == {"action": "flag"} and job.rows == 3 and job.filename == "audit-acme.csv"
    text = b"".join(client.get(f"/t/acme/exports/{job.pk}/download/").streaming_content).decode()
    assert [row["action"] for row in csv.DictReader(io.StringIO(text))] == ["flag"] * 3


def test_bad_filters_are_a_400_naming_them_and_queue_nothing(client, auditor, trail):
    client.force_login(auditor)

    response = client.post("/t/acme/audit/export.jsonl", {"since": "2026-05-02", "until": "2026-05-01"})

    assert response.status_code == 400 and "From must not be after Until" in response.content.decode()
    assert not JobFile.objects.exists()


def test_a_file_whose_filters_no_longer_read_fails_saying_why_and_keeps_nothing(acme, trail, job_files_dir):
    job = JobFile.objects.create(
        tenant=acme,
        kind="audit.jsonl",
        params={"since": "not a day"},
        filename="x.jsonl",
        requested_by="user:1",
    )

    assert services.job_file_produce(acme.pk, job.pk) == "failed"

    job.refresh_from_db()
    assert job.state == "failed" and "since" in job.error
    assert not job_files_dir.exists() or not any(job_files_dir.rglob("*.jsonl"))


def test_another_tenants_export_is_a_404_and_a_reviewer_may_not_see_an_auditors(
    client, auditor, reviewer, globex_lead, trail
):
    client.force_login(auditor)
    job = JobFile.objects.get(pk=client.post("/t/acme/audit/export.jsonl").url.split("/")[-2])
    produce(job)

    client.force_login(globex_lead)
    assert client.get(f"/t/globex/exports/{job.pk}/").status_code == 404
    assert client.get(f"/t/globex/exports/{job.pk}/download/").status_code == 404
    client.force_login(reviewer)
    assert client.get(f"/t/acme/exports/{job.pk}/download/").status_code == 403
    assert client.get("/t/acme/exports/").status_code == 403


def test_the_list_says_who_asked_for_what_and_where_it_stands(client, auditor, lead, trail):
    auditor.first_name, auditor.last_name = "Ada", "Byron"
    auditor.save()
    client.force_login(auditor)
    client.post("/t/acme/audit/export.jsonl", {"action": "flag"})

    client.force_login(lead)
    page = client.get("/t/acme/exports/").content.decode()

    assert "Ada Byron" in page and "Audit trail (JSONL)" in page and "action = flag" in page
    assert "queued" in page


def test_the_sweep_removes_expired_files_and_keeps_who_asked_for_them(client, auditor, trail):
    client.force_login(auditor)
    job = produce(JobFile.objects.get(pk=client.post("/t/acme/audit/export.jsonl").url.split("/")[-2]))
    stored = services.storage().path(job.path)

    assert services.sweep(now=job.expires_at - timedelta(minutes=1)) == 0
    assert services.sweep(now=job.expires_at + timedelta(minutes=1)) == 1

    job.refresh_from_db()
    assert job.removed_at is not None and job.requested_by == f"user:{auditor.pk}"
    assert not os.path.exists(stored)
    response = client.get(f"/t/acme/exports/{job.pk}/download/")
    assert response.status_code == 410 and "expired and was removed" in response.content.decode()


def test_a_job_whose_worker_stopped_is_taken_over_after_its_lease_and_failed_when_none_does(
    acme, trail, settings
):
    job = JobFile.objects.create(tenant=acme, kind="audit.jsonl", filename="a.jsonl", requested_by="user:1")
    now = timezone.now()
    JobFile.objects.filter(pk=job.pk).update(state="running", started_at=now, beat_at=now)
    assert services.job_file_produce(acme.pk, job.pk) == "taken"  # a live worker holds it

    stalled = now - timedelta(seconds=settings.JOB_FILES_LEASE_SECONDS + 1)
    JobFile.objects.filter(pk=job.pk).update(beat_at=stalled)
    assert services.job_file_produce(acme.pk, job.pk) == "done"  # the redelivered task takes it over

    other = JobFile.objects.create(tenant=acme, kind="audit.jsonl", filename="b.jsonl", requested_by="user:1")
    lost = now - timedelta(seconds=settings.JOB_FILES_LOST_SECONDS + 1)
    JobFile.objects.filter(pk=other.pk).update(state="running", started_at=lost, beat_at=lost)
    services.sweep()
    other.refresh_from_db()
    assert other.state == "failed" and "stopped" in other.error


def test_writing_a_file_holds_a_bounded_number_of_rows_however_many_there_are(acme, globex):
    peaks = {}
    for tenant, rows in ((acme, 6_000), (globex, 30_000)):  # both past two chunks of 2,000
        long_trail(tenant, rows)
        job = JobFile.objects.create(
            tenant=tenant, kind="audit.jsonl", filename="t.jsonl", requested_by="user:1"
        )
        tracemalloc.start()
        produced = produce(job)
        peaks[rows] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert produced.rows == rows

    assert peaks[30_000] < 1.3 * peaks[6_000]  # five times the rows, not five times the memory
