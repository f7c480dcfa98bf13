"""The auditor's workspace: the trail filtered, its verification state, lineage, and exports
that can be verified without this code base (docs/audit.md, tools/verify_export.py)."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory_review.agents import receipts as receipt_log
from memory_review.audit import verification
from memory_review.lifecycle import Actor
from memory_review.tenancy.names import actor_names

from .. import audit_trail, downloads, lineage
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
            listing = audit_trail.trail_page(
                transitions, membership.tenant, filters.ordering,
                after=request.GET.get("after"), before=request.GET.get("before"),
            )  # fmt: skip
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
        query=query.urlencode(), job_above=settings.EXPORT_JOB_ABOVE_ROWS,
        **_verification_state(membership.tenant),
    )  # fmt: skip


def _verification_state(tenant) -> dict:
    """What the page's verification region shows: the latest result, and a run on its way."""
    run, latest = verification.latest_run(tenant), verification.latest(tenant)
    if run is not None:
        run.requested_by_name = actor_names([run.requested_by])[run.requested_by]
        run.failed_since_result = run.state == "failed" and (
            latest is None or run.finished_at > latest.verified_at
        )
    return {"verification": latest, "run": run}


@require_POST
@tenant_view
def audit_verify(request: HttpRequest, membership) -> HttpResponse:
    """Queue a verification of the whole trail; a worker runs it and the page follows it. One
    runs at a time: a second request is told so, and shown the one running."""
    require_auditor(membership)
    try:
        verification.verification_request(membership.tenant, by=str(Actor.user(request.user)))
    except verification.AlreadyRunning as exc:
        name = actor_names([exc.run.requested_by])[exc.run.requested_by]
        messages.info(request, f"A verification is already running (asked for by {name} at "
                               f"{exc.run.requested_at:%H:%M:%S}): it is shown below.")  # fmt: skip
    return redirect(reverse("audit-trail", args=[membership.tenant.slug]) + "#verification")


@require_GET
@tenant_view
def audit_verification(request: HttpRequest, membership) -> HttpResponse:
    """The verification region alone, which htmx asks for every 2 s while a run is on its way."""
    require_auditor(membership)
    if not request.htmx:
        return redirect(reverse("audit-trail", args=[membership.tenant.slug]) + "#verification")
    state = _verification_state(membership.tenant)
    return page(request, membership, "review/audit.html#verification", **state)


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
        lineage=lineage.lineage(memory, after=request.GET.get("after"), before=request.GET.get("before")),
        usage=receipt_log.usage(memory),
    )
