"""Checking a tenant's whole trail and recording what was found (the auditor's workspace shows
it). The checks themselves are in audit/checks.py; docs/audit.md lists them for auditors."""

from django.utils import timezone

from memory_review.tenancy.db_context import tenant_context
from memory_review.tenancy.models import Tenant
from memory_review.textlimits import fit

from . import checkpoints, checks
from .checks import Break
from .keys import Keyring, keyring
from .models import AuditChain, AuditVerification

STALE = "stale"  # the only problem the checkpoint job may write past: writing is its remedy


def verify(
    tenant: Tenant, *, ring: Keyring | None = None
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
    problem, trail_end = checks.trail(tenant, head, ring, marks=frozenset(c.seq for c in lines))
    if problem:
        return problem, found
    problem, seals_end = checks.ledger(tenant, head, ring, marks=frozenset(c.seal_seq or 0 for c in lines))
    return (
        problem
        or checks.heads(tenant, head, trail_end, seals_end)
        or checks.against_checkpoints(tenant, found, trail_end, seals_end)
        or checks.binding(tenant, trail_end, seals_end)
        or checks.sealed_rows(tenant, ring)
        or checks.statuses(tenant)
        or checks.rules(tenant)
        or stale
    ), found


def problem_in(tenant: Tenant) -> Break | None:
    """The first problem in the tenant's trail, or None (what tests and scripts ask)."""
    with tenant_context(tenant.pk):
        return verify(tenant)[0]


def verify_and_record(tenant: Tenant, *, by: str) -> AuditVerification:
    """Walk everything against the checkpoint file, and keep the result (sealed)."""
    with tenant_context(tenant.pk):
        head = AuditChain.objects.for_tenant(tenant).first()
        problem, found = verify(tenant)
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
    return result, written


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
