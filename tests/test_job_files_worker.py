"""Exports written as files and "Verify now", each through a real Celery worker on Redis (issue
17, item 5): the page's request queues the job when it commits, a worker process picks it up,
and the page shows it done; the file the worker wrote through the shared folder is the one the
web hands over.

PostgreSQL only, as the other worker drills (tests/assessments/test_worker.py says why)."""

import hashlib

from memory_review.audit import checkpoints
from memory_review.audit.models import VerificationRun
from memory_review.jobfiles.models import JobFile
from tests.api.test_webhooks_worker import on_the_workers_broker  # noqa: F401 (the drill's fixture)
from tests.assessments.test_worker import pytestmark, wait_for  # noqa: F401 (pytestmark)
from tests.assessments.test_worker import workers as pool  # noqa: F401 (the worker drill's fixture)
from tests.factories import long_trail
from tests.test_job_files import job_files_dir  # noqa: F401 (each test's folder, and a low threshold)


def test_a_large_export_is_written_by_a_worker_and_handed_over_whole(
    client,
    acme,
    auditor,
    pool,  # noqa: F811 (the fixture imported above)
    job_files_dir,  # noqa: F811 (the folder web and worker share, as a volume would between hosts)
    on_the_workers_broker,  # noqa: F811 (the fixture imported above)
):
    long_trail(acme, 5000)
    pool.env["JOB_FILES_DIR"] = str(job_files_dir)
    pool.start("exports")
    client.force_login(auditor)

    asked = client.post("/t/acme/audit/export.jsonl")
    job = JobFile.objects.get()
    assert asked.url == f"/t/acme/exports/{job.pk}/"
    wait_for(lambda: JobFile.objects.get(pk=job.pk).state == "done", 60, "the worker to write the file")

    job.refresh_from_db()
    body = b"".join(client.get(f"/t/acme/exports/{job.pk}/download/").streaming_content)
    assert (job.rows, job.expected, job.size) == (5000, 5000, len(body))
    assert job.sha256 == hashlib.sha256(body).hexdigest()
    assert body.decode().splitlines()[-1].startswith('{"action": "flag"') and '"seq": 5000' in body.decode()
    assert "done" in client.get(f"/t/acme/exports/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()


def test_verify_now_is_run_by_a_worker_and_the_page_shows_its_result(
    client,
    acme,
    auditor,
    lead,
    policy,
    pool,  # noqa: F811 (the fixture imported above)
    on_the_workers_broker,  # noqa: F811 (the fixture imported above)
):
    from memory_review.lifecycle import Actor, transition
    from tests.factories import flagged

    memory = flagged(acme, policy, subject="delivery day")
    transition(obj=memory, action="approve", actor=Actor.user(lead), reason="checked", seen_version=2)
    checkpoints.write(acme)
    pool.start("verifier")
    client.force_login(auditor)

    client.post("/t/acme/audit/verify/")
    wait_for(lambda: VerificationRun.objects.get().state == "done", 60, "the worker to verify the trail")

    run = VerificationRun.objects.get()
    assert run.result.intact and run.checked == run.total > 0
    region = client.get("/t/acme/audit/verification/", HTTP_HX_REQUEST="true").content.decode()
    assert "<strong>Intact</strong> when last checked" in region and "hx-trigger" not in region
