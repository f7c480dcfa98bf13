"""Checking a tenant's whole trail and recording what was found (the auditor's workspace shows
it). The checks themselves are in audit/checks.py; docs/audit.md lists them for auditors.

"Verify now" runs in a Celery worker (issue 17, item 5): a million rows take about 45 s, past a
web worker's patience. verification_request queues a run, one a tenant at a time;
verification_run, the task's work, reports the check it is on and the rows read every CHUNK rows
(its heartbeat), and keeps the verification as verify_audit does."""

import logging
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory_review.integrity.db_context import tenant_context
from memory_review.integrity.keys import Keyring, keyring
from memory_review.tenancy.models import Tenant
from memory_review.textlimits import fit

from . import checkpoints, checks, identities
from .checks import UNWATCHED, Break, Progress
from .models import AuditChain, AuditVerification, RunState, VerificationRun

STALE = "stale"  # the only problem the checkpoint job may write past: writing is its remedy


def verify(
    tenant: Tenant, *, ring: Keyring | None = None, progress: Progress = UNWATCHED
) -> tuple[Break | None, checkpoints.CheckpointFile | None]:
    """The tenant's first problem, or None, and the checkpoint file as read.

    In order: the checkpoint file against what the last verification saw; both chains up to
    their heads (each row's link and keyed hash, each transition's free text); the heads, rows
    beyond them, and the seals' view of the transitions' chain; both chains against every
    checkpoint line; every sealed row against its latest seal; every status against its last
    transition; and the rules other layers register (the two-person rule). The heads are read
    first, so rows appended while this runs are not mistaken for a break.
    """
    ring = ring or keyring()
    head = AuditChain.objects.for_tenant(tenant).first()
    progress.at("the checkpoint file")
    seen = most_lines_seen(tenant)
    try:
        found = checkpoints.read(tenant)
    except checkpoints.CheckpointError as exc:
        return Break(tenant.slug, 0, None, str(exc), "checkpoint"), None
    stale = None
    if problem := checkpoints.problem(tenant, found, seen):
        if found is None or "checkpoints stopped" not in problem:
            return Break(tenant.slug, 0, None, problem, "checkpoint"), found
        # Checkpoints that merely stopped are reported only when nothing else is wrong: the
        # checkpoint job resumes them, so it must never take staleness for the whole story.
        stale = Break(tenant.slug, 0, None, problem, STALE)
    lines = found.checkpoints if found else ()
    progress.at("the transitions' chain")
    marks = frozenset(c.seq for c in lines)
    problem, trail_end = checks.trail(tenant, head, ring, marks=marks, progress=progress)
    if problem:
        return problem, found
    progress.at("the seals' ledger")
    marks = frozenset(c.seal_seq or 0 for c in lines)
    problem, seals_end = checks.ledger(tenant, head, ring, marks=marks, progress=progress)
    if problem:
        return problem, found
    progress.at("rows waiting for a position")
    if problem := checks.waiting(tenant, ring):
        return problem, found
    progress.at("the heads and the checkpoints")
    problem = (
        checks.heads(tenant, head, trail_end, seals_end)
        or checks.against_checkpoints(tenant, found, trail_end, seals_end)
        or checks.binding(tenant, trail_end, seals_end)
    )
    if problem:
        return problem, found
    progress.at("every sealed row against its seal")
    if problem := checks.sealed_rows(tenant, ring, progress=progress):
        return problem, found
    progress.at("who may act: users and sign-ins against their seals")
    if problem := identities.problem(tenant, ring, progress=progress):
        return Break(tenant.slug, 0, None, problem, "rows"), found
    progress.at("every status against its last transition")
    if problem := checks.statuses(tenant):
        return problem, found
    progress.at("the two-person rule")
    return checks.rules(tenant) or stale, found


def problem_in(tenant: Tenant) -> Break | None:
    """The first problem in the tenant's trail, or None (what tests and scripts ask)."""
    with tenant_context(tenant.pk):
        return verify(tenant)[0]


def verify_and_record(tenant: Tenant, *, by: str, progress: Progress = UNWATCHED) -> AuditVerification:
    """Walk everything against the checkpoint file, and keep the result (sealed)."""
    with tenant_context(tenant.pk):
        head = AuditChain.objects.for_tenant(tenant).first()
        problem, found = verify(tenant, progress=progress)
        record = AuditVerification.objects.create(
            tenant=tenant,
            verified_at=timezone.now(),
            intact=problem is None,
            problem=fit(str(problem), 1000) if problem else None,
            seq=head.seq if head else 0,
            seal_seq=head.seal_seq if head else 0,
            checkpoint_seq=found.newest.seq if found else None,
            checkpoint_lines=found.lines if found else 0,
            checkpoint_line_hash=found.newest_line_hash if found else None,
            by=by,
        )
        record.stale_only = problem is not None and problem.where == STALE
        return record


def verify_and_checkpoint(
    tenant: Tenant, *, by: str
) -> tuple[AuditVerification, checkpoints.Checkpoint | None]:
    """Verify the tenant's trail and, when it is intact (or its checkpoints merely stopped),
    append a signed checkpoint of its heads; a broken trail is never vouched for. After resuming
    stopped checkpoints it verifies again, so the latest verification says it is whole. The
    checkpoint job and `manage.py audit_checkpoint` both do this."""
    result = verify_and_record(tenant, by=by)
    if not (result.intact or result.stale_only):
        return result, None
    written = checkpoints.write(tenant)
    if result.stale_only:
        result = verify_and_record(tenant, by=by)
    else:
        _remember_written(result, tenant)
    return result, written


def _remember_written(result: AuditVerification, tenant: Tenant) -> None:
    """The line just written, in the database (sealed) as the lines this verification leaves: so
    removing the newest line is named by the very next verification, not only once a later run
    has read it (the file alone cannot show it was shortened)."""
    found = checkpoints.read(tenant)
    with tenant_context(tenant.pk):
        result.checkpoint_lines, result.checkpoint_line_hash = found.lines, found.newest_line_hash
        result.save(update_fields=["checkpoint_lines", "checkpoint_line_hash"])


def latest(tenant: Tenant) -> AuditVerification | None:
    return AuditVerification.objects.for_tenant(tenant).order_by("-verified_at", "-pk").first()


def most_lines_seen(tenant: Tenant) -> AuditVerification | None:
    """The verification that read the longest checkpoint file: a file is never shorter than
    that, whatever later checks found (one that saw no file must not make a missing one fine)."""
    return (
        AuditVerification.objects.for_tenant(tenant)
        .filter(checkpoint_lines__gt=0)
        .order_by("-checkpoint_lines", "-verified_at", "-pk")
        .first()
    )


# -- "Verify now", as a job ------------------------------------------------------------------------

logger = logging.getLogger(__name__)
RUN_TASK = "memory_review.audit.tasks.verify_run"


class AlreadyRunning(Exception):
    """A verification of this tenant is queued or running: a second would only wait behind it."""

    def __init__(self, run: VerificationRun):
        super().__init__(f"a verification asked for at {run.requested_at:%H:%M:%S} is {run.state}")
        self.run = run


class _Lost(Exception):
    """The run is no longer this worker's (taken over, or given up by the next request)."""


def active_run(tenant: Tenant) -> VerificationRun | None:
    """The tenant's queued or running verification, if one is alive. One whose worker stopped
    beating (or that no worker took) for AUDIT_VERIFY_LOST_SECONDS is failed here, saying so."""
    now = timezone.now()
    lost = now - timedelta(seconds=settings.AUDIT_VERIFY_LOST_SECONDS)
    runs = VerificationRun.objects.for_tenant(tenant)
    stopped = Q(state=RunState.RUNNING, beat_at__lt=lost) | Q(state=RunState.QUEUED, requested_at__lt=lost)
    runs.filter(stopped).update(
        state=RunState.FAILED, finished_at=now,
        error="the worker stopped (or none took it) before it finished: verify again",
    )  # fmt: skip
    return runs.filter(state__in=(RunState.QUEUED, RunState.RUNNING)).order_by("-requested_at", "-pk").first()


def latest_run(tenant: Tenant) -> VerificationRun | None:
    """The tenant's newest run, for the page; `running` says whether it is still on its way."""
    run = VerificationRun.objects.for_tenant(tenant).order_by("-requested_at", "-pk").first()
    if run is not None:
        lost = timezone.now() - timedelta(seconds=settings.AUDIT_VERIFY_LOST_SECONDS)
        run.running = run.active and (run.beat_at or run.requested_at) >= lost
    return run


def verification_request(tenant: Tenant, *, by: str) -> VerificationRun:
    """Queue a verification of the tenant's whole trail; AlreadyRunning if one is on its way."""
    with transaction.atomic():
        Tenant.objects.select_for_update().get(pk=tenant.pk)  # one request a tenant at a time
        if (running := active_run(tenant)) is not None:
            raise AlreadyRunning(running)
        run = VerificationRun.objects.create(tenant=tenant, requested_by=by)
        transaction.on_commit(lambda: current_app.signature(RUN_TASK, args=(tenant.pk, run.pk)).delay())
    return run


def verification_run(tenant_id: int, pk: int) -> str:
    """The task's work: 'done', 'failed', or 'taken' when the run is not this worker's."""
    with tenant_context(tenant_id):
        now = timezone.now()
        lapsed = now - timedelta(seconds=settings.AUDIT_VERIFY_LEASE_SECONDS)
        taken = (
            VerificationRun.objects.filter(tenant_id=tenant_id, pk=pk)
            .filter(Q(state=RunState.QUEUED) | Q(state=RunState.RUNNING, beat_at__lt=lapsed))
            .update(state=RunState.RUNNING, started_at=now, beat_at=now, checked=0)
        )
        if not taken:
            return "taken"
        run = VerificationRun.objects.select_related("tenant").get(pk=pk)
        ours = VerificationRun.objects.filter(pk=pk, state=RunState.RUNNING, started_at=run.started_at)
        head = AuditChain.objects.for_tenant(run.tenant).first()
        total = (head.seq + 2 * head.seal_seq) if head else 0

        def report(stage: str, checked: int) -> None:
            if not ours.update(stage=stage, checked=min(checked, total), total=total, beat_at=timezone.now()):
                raise _Lost

        try:
            record = verify_and_record(run.tenant, by=run.requested_by, progress=Progress(report))
        except _Lost:
            return "taken"
        except Exception as exc:  # the page says what went wrong; the worker goes on
            logger.exception("verification run %s failed", pk)
            ours.update(
                state=RunState.FAILED,
                error=fit(f"{type(exc).__name__}: {exc}", 1000),
                finished_at=timezone.now(),
            )
            return "failed"
        ours.update(state=RunState.DONE, result=record, checked=total, finished_at=timezone.now())
        return "done"
