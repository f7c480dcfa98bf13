"""One memory: its page (provenance, status and verdict history, chart, links graph, what held
at a time), the reviewer's actions on it, and claiming it."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory_review import params, textlimits
from memory_review.agents import receipts as receipt_log
from memory_review.assessments import reassessment
from memory_review.compliance import dual_control
from memory_review.lifecycle import LifecycleError, StaleVersion
from memory_review.memories.models import Memory, MemoryStatus
from memory_review.tenancy.models import Membership
from memory_review.tenancy.names import display_name
from memory_review.workflow import assignment, claims
from memory_review.workflow.decisions import (
    ACTIONS,
    KEEP,
    REWRITE,
    ReasonRequired,
    available_actions,
    can_rewrite,
    conflict_for,
    memory_decide,
    memory_rewrite,
)

from .. import charts, downloads, explain, graph, lists, memory_page, rows, words
from ..access import get_memory_for, require_lead, require_reviewer, works_blind
from .base import page, safe_next, tenant_view
from .blind import memory_evidence
from .exports import deliver

DETAIL = "review/memory_detail.html"


def _time_or_problem(read):
    """The time asked about and no problem, or no time and what is wrong (the page says it)."""
    try:
        return read(), None
    except params.BadParameter as exc:
        return None, str(exc)


@require_GET
@tenant_view
def memory_detail(request: HttpRequest, membership, pk: int) -> HttpResponse:
    memory = get_memory_for(membership, pk)
    if works_blind(membership):
        return memory_evidence(request, membership, memory)
    hops = 2 if request.GET.get("hops") == "2" else 1
    at, as_of_problem = _time_or_problem(lambda: params.moment(request.GET, "as_of"))
    wrong_since, since_problem = _time_or_problem(lambda: params.moment(request.GET, "wrong_since"))
    verdicts = memory_page.verdicts_page(memory, after=request.GET.get("after"))
    worth = reassessment.worth_reassessing(memory)
    (dependents_count, more_dependents), dependents = (
        reassessment.dependents_shown(memory) if worth else ((0, False), [])
    )
    neighbourhood = memory_page.neighbourhood(memory, hops=hops)
    # Every link, a page at a time: asked for past the graph's first hundred.
    every_link = request.GET.get("links") is not None or request.GET.get("part") == "links"
    points, more_votes = memory_page.still_true_series(memory) if verdicts.rows else ([], False)  # the chart
    drawn, href = (
        graph.layout(neighbourhood),
        graph.memory_href(reverse("memory-detail", args=[membership.tenant.slug, memory.pk])),
    )
    context = dict(
        memory=memory,
        evidence=explain.evidence_for(memory),
        last_judged=memory_page.last_judged(memory),
        last_bearing=memory_page.last_judged(memory, bearing=True),
        history=memory_page.status_history(memory, after=request.GET.get("moves_after")),
        verdicts=verdicts,
        chart=charts.still_true_chart(points, memory_page.active_thresholds(memory)) if points else None,
        chart_more=more_votes,
        neighbourhood=neighbourhood,
        layout=drawn,
        graph_svg=graph.svg_items(drawn, href),
        graph_list=graph.link_items(neighbourhood, href),
        links=memory_page.links_page(memory, after=request.GET.get("links_after")) if every_link else None,
        hops=hops,
        belief=memory_page.belief_at(memory, at) if at else None,
        as_of=at,
        as_of_problem=as_of_problem,
        dependents_count=dependents_count,
        more_dependents=more_dependents,
        dependents=dependents,
        usage=(usage := receipt_log.usage(memory, since=wrong_since)),
        used=receipt_log.recent(memory) if usage.responses else [],
        wrong_since=wrong_since,
        since_problem=since_problem,
        **_state(request, membership, memory),
    )
    partial = request.GET.get("part") if request.htmx else None
    if partial in ("verdicts", "history", "graph", "links", "asof"):
        return page(request, membership, f"{DETAIL}#{partial}", **context)
    bad = as_of_problem or since_problem
    return page(request, membership, DETAIL, status=400 if bad else 200, **context)


@require_http_methods(["GET", "POST"])
@tenant_view
def memory_responses_export(request: HttpRequest, membership, pk: int) -> HttpResponse:
    """The responses that used the memory while it was wrong (thread, user, time), as CSV, so a
    lead can follow up with the customers; a large one is written by a worker (views/exports.py)."""
    require_lead(membership)
    memory = get_memory_for(membership, pk)
    asked = params.moment(request.GET if request.method == "GET" else request.POST, "wrong_since")
    since = asked or receipt_log.wrong_from(memory)[0]
    if since is None:
        raise params.BadParameter("wrong_since", "is needed: this memory still stands, so say from when")
    asked_for = {"memory": memory.pk, "since": since.isoformat()}
    return deliver(request, membership, downloads.RESPONSES, asked_for)


def _state(request: HttpRequest, membership, memory) -> dict:
    """What the status panel shows: the claim, the moves this viewer may make, the rewrite."""
    reviewers = []
    if membership.can_lead and memory.status == MemoryStatus.NEEDS_REVIEW:
        reviewers = [(m.user_id, display_name(m.user)) for m in assignment.reviewers(membership.tenant)]
    claim = claims.held_claim(memory)
    return dict(
        pending_requests=dual_control.pending(memory.tenant).filter(memory=memory),
        claim=claim,
        held_by_other=claim if claim is not None and claim.holder_id != request.user.pk else None,
        assigned=assignment.assignees([memory], memory.tenant_id)[memory.pk]
        if memory.status == MemoryStatus.NEEDS_REVIEW
        else [],
        actions=available_actions(memory) if membership.can_review else [],
        rewrite=REWRITE if membership.can_review and can_rewrite(memory) else None,
        reviewers=reviewers,
        claim_minutes=settings.REVIEW_CLAIM_MINUTES,
    )


class _DecisionForm(forms.Form):
    seen_version = forms.IntegerField(min_value=1, max_value=params.column_max(Memory, "row_version"))
    view = forms.ChoiceField(choices=[("page", "page"), ("row", "row")], required=False)
    filters = forms.CharField(required=False, max_length=2000)
    # A new hard TTL (restoring or rewriting a memory past its own): a time, or none at all.
    valid_until = params.DateTimeField(required=False, input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"])
    no_ttl = forms.BooleanField(required=False)

    def service_arguments(self) -> dict:
        data = dict(self.cleaned_data)
        for name in ("seen_version", "view", "filters", "no_ttl"):
            data.pop(name, None)
        if self.cleaned_data.get("no_ttl"):
            data["valid_until"] = None
        elif data.get("valid_until") is None:
            data["valid_until"] = KEEP
        return data


class ActForm(_DecisionForm):
    action = forms.ChoiceField(choices=[(name, action.label) for name, action in ACTIONS.items()])
    reason = textlimits.CharField(max_length=1000, required=False, strip=True)


class RewriteForm(_DecisionForm):
    content = forms.CharField(max_length=20_000, strip=True)
    reason = textlimits.CharField(max_length=1000, strip=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["content"].max_length = settings.API_MAX_TEXT_CHARS


@require_POST
@tenant_view
def memory_act(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_reviewer(membership)
    memory = get_memory_for(membership, pk)
    return _decide(request, membership, memory, ActForm(request.POST), memory_decide)


@require_POST
@tenant_view
def memory_rewrite_view(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_reviewer(membership)
    memory = get_memory_for(membership, pk)
    return _decide(request, membership, memory, RewriteForm(request.POST), memory_rewrite)


def _decide(request: HttpRequest, membership, memory, form: forms.Form, service) -> HttpResponse:
    view = request.POST.get("view") or "page"
    if not form.is_valid():
        problem = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        return _respond(request, membership, memory, view, problem=problem, status=400)
    data = form.service_arguments()
    seen, filters = form.cleaned_data["seen_version"], form.cleaned_data["filters"]
    try:
        outcome = service(
            memory=memory,
            user=request.user,
            seen_version=seen,
            can_lead=membership.can_lead,
            request_id=request.request_id,
            **data,
        )
    except StaleVersion:
        conflict = conflict_for(memory, seen)
        words.in_words(conflict.moves, membership.tenant)
        return _respond(request, membership, memory, view, conflict=conflict, status=409)
    except ReasonRequired as exc:
        return _respond(request, membership, memory, view, problem=str(exc), status=400)
    except (LifecycleError, claims.ClaimError) as exc:
        return _respond(request, membership, memory, view, problem=str(exc), status=409)
    return _respond(request, membership, outcome.memory, view, outcome=outcome, filters=filters)


def _respond(
    request, membership, memory, view, *, outcome=None, conflict=None, problem=None, status=200, filters=""
):
    """htmx: the region that changed, plus out-of-band the history, count and toast. Without
    JavaScript: back where the form was, with the message."""
    if not request.htmx:
        if outcome is not None:
            messages.success(request, outcome.message)
        else:
            messages.error(request, problem or _conflict_text(conflict))
        return redirect(
            safe_next(request, reverse("memory-detail", args=[membership.tenant.slug, memory.pk]))
        )
    memory.refresh_from_db()
    context = {
        "membership": membership,
        "tenant": membership.tenant,
        "memory": memory,
        "outcome": outcome,
        "conflict": conflict,
        "problem": problem,
    }
    if view == "row":
        row = lists.row_of(memory, viewer=request.user)
        list_name = "memories" if request.POST.get("list_name") == "memories" else "queue"
        line = rows.row_context(request, membership, list_name, query=filters)
        parts = [rows.memory_row(row, line, outcome=outcome, conflict=conflict, problem=problem)]
        if outcome is not None and list_name == "queue":  # the queue's count; the list's is its own
            parts.append(
                render_to_string(
                    "review/includes/list_total.html",
                    {**_queue_size(request, membership, filters), "oob": True},
                    request,
                )
            )
    else:
        context.update(_state(request, membership, memory))
        parts = [render_to_string(f"{DETAIL}#state", context, request)]
        if outcome is not None:
            context["history"] = memory_page.status_history(memory)
            context["usage"] = receipt_log.usage(memory)  # a kill now counts responses while wrong
            context["oob"] = True
            parts.append(render_to_string(f"{DETAIL}#history", context, request))
    if outcome is not None:
        parts.append(render_to_string("review/includes/flash.html", {"text": outcome.message}, request))
    return HttpResponse("".join(parts), status=status)


def _queue_size(request, membership, filters: str) -> dict:
    """The filtered queue's size after an action in it, as its page says it (lists.size_of)."""
    form = lists.QueueFilters(QueryDict(filters), tenant=membership.tenant)
    if not form.is_valid():
        form = lists.QueueFilters(QueryDict(), tenant=membership.tenant)
    memories = lists.filtered(lists.queue_memories(membership.tenant), form, user=request.user)
    size = lists.size_of(memories, form)
    return {"total": size.n, "more": size.more}


def _conflict_text(conflict) -> str:
    if conflict is None:
        return "Nothing was changed."
    moves = "; ".join(
        f"{m.actor_name} {words.moved(m)} at {timezone.localtime(m.created_at):%H:%M}" for m in conflict.moves
    )
    moves = moves or f"it is now {words.status_words(conflict.memory.status)}"
    return f"This memory changed since you loaded it ({moves}). Nothing was changed: look again and decide."


# -- claims -------------------------------------------------------------------------------------


def _claim_response(request, membership, memory, *, problem=None, status=200) -> HttpResponse:
    view = request.POST.get("view") or "page"
    if not request.htmx:
        if problem:
            messages.error(request, problem)
        return redirect(
            safe_next(request, reverse("memory-detail", args=[membership.tenant.slug, memory.pk]))
        )
    context = {"membership": membership, "tenant": membership.tenant, "memory": memory, "problem": problem}
    if view == "row":
        row = lists.row_of(memory, viewer=request.user)
        line = rows.row_context(request, membership, "queue")
        return HttpResponse(rows.memory_row(row, line, problem=problem), status=status)
    context.update(_state(request, membership, memory))
    region = "claim" if view == "claim" else "state"
    if region == "claim":
        context["claim_problem"], context["problem"] = problem, None
    return HttpResponse(render_to_string(f"{DETAIL}#{region}", context, request), status=status)


def _claim_action(request, membership, pk, act) -> HttpResponse:
    require_reviewer(membership)
    memory = get_memory_for(membership, pk)
    try:
        act(memory)
    except claims.ClaimError as exc:
        return _claim_response(request, membership, memory, problem=str(exc), status=409)
    return _claim_response(request, membership, memory)


@require_POST
@tenant_view
def claim_take(request: HttpRequest, membership, pk: int) -> HttpResponse:
    return _claim_action(
        request, membership, pk, lambda memory: claims.claim_take(memory=memory, user=request.user)
    )


@require_POST
@tenant_view
def claim_renew(request: HttpRequest, membership, pk: int) -> HttpResponse:
    return _claim_action(
        request, membership, pk, lambda memory: claims.claim_renew(memory=memory, user=request.user)
    )


@require_POST
@tenant_view
def claim_release(request: HttpRequest, membership, pk: int) -> HttpResponse:
    return _claim_action(
        request,
        membership,
        pk,
        lambda memory: claims.claim_release(
            memory=memory,
            by=request.user,
            note=f"released by {display_name(request.user)}",
            can_lead=membership.can_lead,
        ),
    )


@require_POST
@tenant_view
def claim_reassign(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_lead(membership)
    # Only a member of this tenant can be named: anyone else is a 404, never a name or a hint.
    member = get_object_or_404(
        Membership.objects.filter(tenant=membership.tenant).select_related("user"),
        user_id=params.object_id(request.POST, "to", Membership, "user") or 0,
    )
    to = member.user
    return _claim_action(
        request, membership, pk, lambda memory: claims.claim_reassign(memory=memory, to=to, by=request.user)
    )


@require_POST
@tenant_view
def claim_ask(request: HttpRequest, membership, pk: int) -> HttpResponse:
    """Ask a colleague to let go of an item they hold (their pages say who asked)."""
    return _claim_action(
        request, membership, pk, lambda memory: claims.claim_ask_release(memory=memory, by=request.user)
    )


@require_POST
@tenant_view
def claim_take_over(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_lead(membership)
    return _claim_action(
        request, membership, pk, lambda memory: claims.claim_take_over(memory=memory, by=request.user)
    )
