"""Downloads: a small export streams in the request that asked; a large one is written by a
worker as a file, whose page follows its progress and hands it over (memory_review/jobfiles).

GET on an export's URL streams it whatever its size (scripts and curl; gunicorn as shipped lets a
long download finish). The pages' buttons POST to the same URL: up to EXPORT_JOB_ABOVE_ROWS rows
the file streams at once, as a click is expected to; above it a job is queued and the person is
taken to its page, where a download of any size does not depend on one long request."""

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET

from memory_review.jobfiles import services as jobfiles
from memory_review.jobfiles.kinds import KINDS, Kind
from memory_review.jobfiles.models import JobFile
from memory_review.lifecycle import Actor
from memory_review.tenancy.names import actor_names

from .base import page, tenant_view

SHOWN = 50  # the newest jobs listed


def deliver(request: HttpRequest, membership, kind: Kind, params: dict) -> HttpResponse:
    """The export, streamed; or, asked for from a page (POST) and large, a job and its page."""
    tenant = membership.tenant
    if request.method == "POST" and not jobfiles.streams_at_once(kind, tenant, params):
        job = jobfiles.job_file_request(
            tenant=tenant, kind=kind, params=params, by=str(Actor.user(request.user))
        )
        return redirect("export-detail", tenant.slug, job.pk)
    response = StreamingHttpResponse(jobfiles.stream(kind, tenant, params), content_type=kind.content_type)
    response["Content-Disposition"] = f'attachment; filename="{kind.filename(tenant, params)}"'
    return response


def _job_for(membership, pk: int) -> JobFile:
    """Another tenant's job is a 404; one of a kind this member may not ask for, a 403."""
    job = get_object_or_404(JobFile.objects.for_tenant(membership.tenant), pk=pk)
    kind = KINDS.get(job.kind)
    if kind is None or not kind.may(membership):
        raise PermissionDenied("this export is for the people who may ask for it")
    job.kind_label = kind.label
    return job


def _named(jobs: list[JobFile]) -> list[JobFile]:
    names = actor_names(job.requested_by for job in jobs)
    for job in jobs:
        job.requested_by_name = names[job.requested_by]
        job.kind_label = KINDS[job.kind].label
    return jobs


@require_GET
@tenant_view
def export_list(request: HttpRequest, membership) -> HttpResponse:
    """The files workers wrote for this tenant: who asked, when, for what, and where each stands."""
    if not any(kind.may(membership) for kind in KINDS.values()):
        raise PermissionDenied("exports are for auditors, leads and admins")
    jobs = _named(list(jobfiles.visible_to(membership)[:SHOWN]))
    keep = settings.JOB_FILES_KEEP_HOURS
    return page(request, membership, "review/exports.html", jobs=jobs, keep_hours=keep)


@require_GET
@tenant_view
def export_detail(request: HttpRequest, membership, pk: int) -> HttpResponse:
    """One job: its progress while a worker writes it (htmx asks every 2 s), then its file."""
    job = _named([_job_for(membership, pk)])[0]
    template = "review/export_detail.html" + ("#progress" if request.htmx else "")
    return page(request, membership, template, job=job)


@require_GET
@tenant_view
def export_download(request: HttpRequest, membership, pk: int) -> HttpResponse:
    job = _job_for(membership, pk)
    if not job.downloadable:
        return page(request, membership, "review/export_detail.html", status=410 if job.removed_at else 409,
                    job=_named([job])[0])  # fmt: skip
    return FileResponse(
        jobfiles.job_file_open(job), as_attachment=True, filename=job.filename,
        content_type=KINDS[job.kind].content_type,
    )  # fmt: skip
