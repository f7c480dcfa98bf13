"""Writing, keeping and handing over files produced by jobs (issue 17, item 5).

A page asks for an export; below EXPORT_JOB_ABOVE_ROWS rows it streams at once, above it a job is
queued here. A Celery worker leases the job, counts the rows, writes the file a row at a time to
a temporary file (hashing it as it goes, never holding more than a row), reports how far it has
got about once a second (which is also its heartbeat), then saves the file through Django's
storage API: the `jobfiles` storage, a folder under var/ by default, or any shared storage (a
volume, S3 through django-storages) so web and workers on separate hosts see the same files.
Files expire after JOB_FILES_KEEP_HOURS; the beat job removes them and keeps the record.

A worker that dies stops beating: after JOB_FILES_LEASE_SECONDS the task the broker hands back
takes the job over from the start, and after JOB_FILES_LOST_SECONDS the sweep fails a job no
worker took over, saying so."""

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory_review.integrity.db_context import tenant_context
from memory_review.tenancy.models import Membership, Tenant
from memory_review.textlimits import fit

from .kinds import KINDS, Kind, Unreadable
from .models import JobFile, JobState

logger = logging.getLogger(__name__)

PRODUCE = "memory_review.jobfiles.tasks.produce"
REPORT_EVERY_S = 1.0  # progress, and the worker's heartbeat
STREAM_PIECE = 64 * 1024
SWEEP_BATCH = 200  # expired files removed per tenant per sweep; the next sweep takes the rest


class Lost(Exception):
    """The job is no longer this worker's: another took it over, or the sweep gave it up."""


def storage():
    return storages["jobfiles"]


def streams_at_once(kind: Kind, tenant: Tenant, params: dict) -> bool:
    """Small enough to stream in the request that asked (what a person expects of a click)."""
    return kind.count(tenant, params) <= settings.EXPORT_JOB_ABOVE_ROWS


def stream(kind: Kind, tenant: Tenant, params: dict) -> Iterator[str]:
    """The file, for a response to stream, in pieces of about STREAM_PIECE characters (a write to
    the socket a row made a million writes, each with its chunk's framing). Read after the view
    has returned and the request's tenant context is cleared, so it sets its own for the
    database's row-level security."""
    with tenant_context(tenant.pk):
        piece, size = [], 0
        for line in kind.lines(tenant, params):
            piece.append(line)
            size += len(line)
            if size >= STREAM_PIECE:
                yield "".join(piece)
                piece, size = [], 0
        yield "".join(piece)


def job_file_request(*, tenant: Tenant, kind: Kind, params: dict, by: str) -> JobFile:
    """Queue a job that writes the file; the worker is told once the row is committed."""
    job = JobFile.objects.create(
        tenant=tenant, kind=kind.name, params=params, filename=kind.filename(tenant, params), requested_by=by
    )
    transaction.on_commit(lambda: current_app.signature(PRODUCE, args=(tenant.pk, job.pk)).delay())
    return job


def visible_to(membership: Membership):
    """The tenant's jobs of the kinds this member may ask for, newest first."""
    kinds = [name for name, kind in KINDS.items() if kind.may(membership)]
    jobs = JobFile.objects.for_tenant(membership.tenant).filter(kind__in=kinds)
    return jobs.order_by("-requested_at", "-pk")


def job_file_produce(tenant_id: int, pk: int) -> str:
    """Write the job's file (the task's whole work): 'done', 'failed', or 'taken' when it is not
    this worker's to write (finished, or another worker holds a live lease on it)."""
    with tenant_context(tenant_id):
        job = _lease(tenant_id, pk)
        if job is None:
            return "taken"
        try:
            kind = KINDS.get(job.kind)
            if kind is None:
                raise Unreadable([f"no export is called {job.kind!r}"])
            tenant = job.tenant
            expected = kind.count(tenant, job.params)
            JobFile.objects.filter(pk=pk).update(expected=expected)
            _write(job, kind, tenant)
        except Lost:
            logger.info("job file %s was taken over or given up; this worker stopped", pk)
            return "taken"
        except Exception as exc:  # the job says what went wrong; the worker goes on
            logger.exception("job file %s failed", pk)
            problem = str(exc) if isinstance(exc, Unreadable) else f"{type(exc).__name__}: {exc}"
            JobFile.objects.filter(pk=pk, started_at=job.started_at).update(
                state=JobState.FAILED, error=fit(problem, 1000), finished_at=timezone.now()
            )
            return "failed"
        return "done"


def _lease(tenant_id: int, pk: int) -> JobFile | None:
    """Take the job: queued, or running under a worker that stopped beating."""
    now = timezone.now()
    lapsed = now - timedelta(seconds=settings.JOB_FILES_LEASE_SECONDS)
    taken = (
        JobFile.objects.filter(tenant_id=tenant_id, pk=pk)
        .filter(Q(state=JobState.QUEUED) | Q(state=JobState.RUNNING, beat_at__lt=lapsed))
        .update(state=JobState.RUNNING, started_at=now, beat_at=now, rows=0, size=0, error=None)
    )
    return JobFile.objects.select_related("tenant").get(pk=pk) if taken else None


class _Written(File):
    """A finished temporary file: a folder storage moves it into place rather than copying it."""

    def __init__(self, path: str):
        super().__init__(open(path, "rb"), name=os.path.basename(path))  # noqa: SIM115 (closed by save)
        self._path = path

    def temporary_file_path(self) -> str:
        return self._path


def _write(job: JobFile, kind: Kind, tenant: Tenant) -> None:
    ours = JobFile.objects.filter(pk=job.pk, state=JobState.RUNNING, started_at=job.started_at)
    digest, rows, size, reported = hashlib.sha256(), 0, 0, time.monotonic()
    handle, path = tempfile.mkstemp(prefix="jobfile-")
    try:
        with os.fdopen(handle, "wb") as out:
            for n, line in enumerate(kind.lines(tenant, job.params)):
                data = line.encode()
                out.write(data)
                digest.update(data)
                size += len(data)
                rows += n >= kind.header_lines
                if n % 500 == 0 and time.monotonic() - reported >= REPORT_EVERY_S:
                    if not ours.update(rows=rows, size=size, beat_at=timezone.now()):
                        raise Lost
                    reported = time.monotonic()
        with _Written(path) as written:
            name = storage().save(f"{tenant.slug}/{job.pk}/{job.filename}", written)
        now = timezone.now()
        finished = ours.update(
            state=JobState.DONE, rows=rows, size=size, sha256=digest.hexdigest(), path=name, beat_at=now,
            finished_at=now, expires_at=now + timedelta(hours=settings.JOB_FILES_KEEP_HOURS),
        )  # fmt: skip
        if not finished:
            storage().delete(name)
            raise Lost
    finally:
        if os.path.exists(path):
            os.remove(path)


def job_file_open(job: JobFile):
    """The finished file, to hand over (the caller checks it is downloadable)."""
    return storage().open(job.path, "rb")


def sweep(now=None) -> int:
    """Celery beat's job: remove expired files (keeping their records), and fail the jobs whose
    worker stopped and that no other worker took over. How many files were removed."""
    now = now or timezone.now()
    removed = 0
    for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
        try:
            with tenant_context(tenant_id):
                removed += _sweep_tenant(tenant_id, now)
        except Exception:  # one tenant the sweep cannot reach must not stop the others'
            logger.exception("job files sweep: tenant %s skipped", tenant_id)
    return removed


def expire_files(tenant: Tenant) -> int:
    """Every file the tenant's jobs have written expires now and is removed once the caller's
    transaction commits (an erasure: a file exported before it may hold the person's words)."""
    now = timezone.now()
    count = JobFile.objects.filter(tenant=tenant, state=JobState.DONE, removed_at__isnull=True).update(
        expires_at=now
    )

    def remove():
        with tenant_context(tenant.pk):
            _sweep_tenant(tenant.pk, now)

    transaction.on_commit(remove)
    return count


def _sweep_tenant(tenant_id: int, now) -> int:
    jobs = JobFile.objects.filter(tenant_id=tenant_id)
    expired = jobs.filter(state=JobState.DONE, removed_at__isnull=True, expires_at__lte=now)
    removed = 0
    for pk, path in expired.order_by("expires_at").values_list("pk", "path")[:SWEEP_BATCH]:
        storage().delete(path)
        removed += jobs.filter(pk=pk).update(removed_at=now)
    lost = now - timedelta(seconds=settings.JOB_FILES_LOST_SECONDS)
    minutes = settings.JOB_FILES_LOST_SECONDS // 60
    jobs.filter(state=JobState.RUNNING, beat_at__lt=lost).update(
        state=JobState.FAILED, finished_at=now,
        error=f"the worker writing it stopped and no other took it over within {minutes} minutes: ask again",
    )  # fmt: skip
    jobs.filter(state=JobState.QUEUED, requested_at__lt=lost).update(
        state=JobState.FAILED, finished_at=now,
        error=f"no worker took it within {minutes} minutes (are the Celery workers running?): ask again",
    )  # fmt: skip
    return removed
