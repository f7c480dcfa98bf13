"""Every download the screens offer, registered with jobfiles so a Celery worker can write any of
them as a file (review/apps.py imports this; views/exports.py decides between streaming and a
job). Each reads its parameters again from what the job stored, as the page read them."""

from datetime import datetime

from django.db.models import QuerySet

from memory_review.agents import receipts as receipt_log
from memory_review.audit import exports
from memory_review.audit.models import Transition
from memory_review.calibration import evidence
from memory_review.jobfiles.kinds import Kind, Unreadable, register
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Tenant

from . import audit_trail
from .access import works_blind

JSONL = "application/x-ndjson; charset=utf-8"
CSV = "text/csv; charset=utf-8"


def trail(tenant: Tenant, params: dict) -> QuerySet:
    """The transitions an audit export holds: the trail's filters as the page read them."""
    filters = audit_trail.TrailFilters(params, tenant=tenant)
    if not filters.is_valid():
        raise Unreadable([f"{name}: {' '.join(errors)}" for name, errors in filters.errors.items()])
    return filters.filter(Transition.objects.for_tenant(tenant))


def _audit_lines(tenant: Tenant, params: dict, fmt: str):
    rows = trail(tenant, params)
    if fmt == "jsonl":
        return exports.jsonl(tenant, rows, filters=params, complete=not params)
    return exports.csv_lines(tenant, rows)


AUDIT = {
    fmt: register(
        Kind(
            name=f"audit.{fmt}",
            label=f"Audit trail ({fmt.upper()})",
            content_type=JSONL if fmt == "jsonl" else CSV,
            may=lambda membership: membership.can_audit,
            count=lambda tenant, params: trail(tenant, params).count(),
            lines=lambda tenant, params, fmt=fmt: _audit_lines(tenant, params, fmt),
            filename=lambda tenant, params, fmt=fmt: f"audit-{tenant.slug}.{fmt}",
        )
    )
    for fmt in ("jsonl", "csv")
}


def responses(tenant: Tenant, params: dict) -> QuerySet:
    """The responses that used a memory from a time on (`memory`, `since` in ISO 8601)."""
    memory = Memory.objects.for_tenant(tenant).filter(pk=params.get("memory")).first()
    if memory is None:
        raise Unreadable([f"memory: no memory {params.get('memory')} in {tenant.slug}"])
    return receipt_log.while_wrong(memory, datetime.fromisoformat(params["since"]))


RESPONSES = register(
    Kind(
        name="responses.csv",
        label="Responses that used a memory while it was wrong (CSV)",
        content_type=CSV,
        may=lambda membership: membership.can_lead,
        count=lambda tenant, params: responses(tenant, params).count(),
        lines=lambda tenant, params: receipt_log.csv_lines(responses(tenant, params)),
        filename=lambda tenant, params: f"responses-{tenant.slug}-memory-{params['memory']}.csv",
    )
)

REPLAY_SET = register(
    Kind(
        name="replay-set.jsonl",
        label="Gold verdicts as a replay set (JSONL)",
        content_type="application/x-ndjson",
        # It holds every labeler's answers: not for a labeler, who works blind.
        may=lambda membership: membership.can_audit and not works_blind(membership),
        count=lambda tenant, params: evidence.replay_set_size(tenant),
        lines=lambda tenant, params: evidence.replay_set_lines(tenant),
        filename=lambda tenant, params: f"{tenant.slug}-replay-set-{params['at']}.jsonl",
        header_lines=0,
    )
)
