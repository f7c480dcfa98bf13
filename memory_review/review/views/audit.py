"""The auditor's workspace: the trail filtered, its verification state, lineage, and exports
that can be verified without this code base (docs/audit.md, tools/verify_export.py)."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory_review.agents import receipts as receipt_log
from memory_review.audit.verification import latest, verify_and_record
from memory_review.lifecycle import Actor

from .. import audit_trail, downloads
from ..access import get_memory_for, require_auditor
from ..paging import BadCursor
from .base import page, tenant_view
from .exports import deliver


def _filtered(request: HttpRequest, membership, transitions):
    filters = audit_trail.TrailFilters(request.GET, tenant=membership.tenant)
    if not filters.is_valid():
        return filters, None
    return filters, filters.filter(transitions)


@require_GET
@tenant_view
def audit_trail_view(request: HttpRequest, membership) -> HttpResponse:
    require_auditor(membership)
    filters, transitions = _filtered(request, membership, audit_trail.trail(membership.tenant))
    status, listing = 200, None
    if transitions is not None:
        try:
            listing = audit_trail.trail_page(transitions, membership.tenant, after=request.GET.get("after"),
                                             before=request.GET.get("before"))  # fmt: skip
        except BadCursor as exc:
            filters.add_error(None, f"{exc}: start again from the newest")
        else:
            audit_trail.name_actors(listing.rows, membership.tenant)
    if listing is None:
        status = 400
    query = request.GET.copy()
    for cursor in ("after", "before"):
        query.pop(cursor, None)
    return page(
        request, membership, "review/audit.html", status=status, filters=filters, listing=listing,
        query=query.urlencode(), verification=latest(membership.tenant),
        job_above=settings.EXPORT_JOB_ABOVE_ROWS,
    )  # fmt: skip


@require_POST
@tenant_view
def audit_verify(request: HttpRequest, membership) -> HttpResponse:
    require_auditor(membership)
    verify_and_record(membership.tenant, by=str(Actor.user(request.user)))
    return redirect("audit-trail", membership.tenant.slug)


@require_http_methods(["GET", "POST"])
@tenant_view
def audit_export(request: HttpRequest, membership, fmt: str) -> HttpResponse:
    """The filtered trail, streamed (a million rows never sit in memory); asked for from the page
    (POST) and large, written by a worker as a file (views/exports.py)."""
    require_auditor(membership)
    filters = audit_trail.TrailFilters(
        request.GET if request.method == "GET" else request.POST, tenant=membership.tenant
    )
    if not filters.is_valid():
        return page(request, membership, "review/audit.html", status=400, filters=filters, listing=None)
    return deliver(request, membership, downloads.AUDIT[fmt], filters.active)


@require_GET
@tenant_view
def memory_lineage(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_auditor(membership)
    memory = get_memory_for(membership, pk)
    return page(
        request,
        membership,
        "review/lineage.html",
        lineage=audit_trail.lineage(memory),
        usage=receipt_log.usage(memory),
    )
