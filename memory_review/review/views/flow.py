"""The review flow (workflow/flow.py): "Review these" from the queue opens one item at a time in
the queue's order, with the memory beside the evidence that sent it to review; one key decides
and the next item comes (an htmx swap of the flow region, or a redirect without JavaScript).

Each form carries `shown` and `seen_version`, what the page showed; a decision on anything else
is refused and changes nothing (flow.check_shown). After a swap the page's polite live region
(#flash, outside the swapped region, updated out of band) says what was done and what comes
next, and static/js/keys.js moves focus to the new item's heading."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory_review import params
from memory_review.lifecycle import LifecycleError
from memory_review.memories import tallies
from memory_review.workflow import decisions, flow
from memory_review.workflow.claims import ClaimError

from .. import explain, lists
from ..access import get_memory_for, require_reviewer
from .base import page, tenant_view
from .blind import refused_when_blind

TEMPLATE = "review/flow.html"
SKIPS_KEPT = 500


def _skipped_key(membership) -> str:
    return f"flow-skipped:{membership.tenant.slug}"


def _last_key(membership) -> str:
    return f"flow-last:{membership.tenant.slug}"


def _filters(query: QueryDict, membership) -> lists.QueueFilters:
    filters = lists.QueueFilters(query, tenant=membership.tenant)
    if not filters.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in filters.errors.items())
        raise params.BadParameter("filters", problems)
    return filters


def _state(request: HttpRequest, membership, filters, *, current=None, notice=None, problem=None) -> dict:
    """The item to show (`current`, or the next the reviewer may take, claimed on arrival) and
    what the flow says around it."""
    tenant, user = membership.tenant, request.user
    queue = lists.filtered(lists.queue_memories(tenant), filters, user=user)
    skipped = request.session.get(_skipped_key(membership), [])
    memory, claim = current, None
    if memory is None:
        for candidate in flow.candidates(queue, user=user, skipped=skipped).order_by(*filters.ordering)[:5]:
            claim = flow.arrive(candidate, user=user)
            if claim is not None:  # else a colleague took it a moment ago
                memory = candidate
                break
    elif memory.status == lists.MemoryStatus.NEEDS_REVIEW:
        claim = flow.arrive(memory, user=user)
    if memory is not None:
        memory = get_memory_for(membership, memory.pk)
    after = ""  # what the live region says comes now, after what was done
    if (notice or problem) and memory is None:
        after = "Nothing left to review."
    elif (notice or problem) and memory != current:
        after = f"Next: “{memory.subject}”."
    query = filters.data.urlencode() if hasattr(filters.data, "urlencode") else ""
    last = request.session.get(_last_key(membership))
    left = _left(queue, filters, tenant)
    return dict(
        memory=memory,
        claim=claim,
        shown=flow.shown(memory, user=user) if memory is not None else "",
        kill=decisions.ACTIONS[flow.kill_action(memory)].label if memory is not None else "",
        evidence=explain.evidence_for(memory) if memory is not None else None,
        progress=flow.progress(tenant, user=user, left=left.n, more_left=left.more),
        filters=filters,
        query=query,
        can_undo=last is not None,
        notice=notice,
        problem=problem,
        said=" ".join(part for part in (problem, notice, after) if part),
        skipped=len(skipped),
        queue_url=reverse("review-queue", args=[tenant.slug]) + (f"?{query}" if query else ""),
    )


def _left(queue, filters, tenant) -> lists.Size:
    """What is left, as the queue counts it: the writers' count when unfiltered, else counted up to
    a bound (a busy day's 25,000 waiting were counted row by row on every item)."""
    waiting = tallies.counts(tenant).get(lists.MemoryStatus.NEEDS_REVIEW, 0)
    return lists.size_of(queue, filters, counts={lists.MemoryStatus.NEEDS_REVIEW: waiting})


def _answer(request: HttpRequest, membership, filters, **state) -> HttpResponse:
    if request.htmx:
        return page(request, membership, f"{TEMPLATE}#flow", **_state(request, membership, filters, **state))
    if state.get("notice"):
        messages.success(request, state["notice"])
    if state.get("problem"):
        messages.error(request, state["problem"])
    target = reverse("review-flow", args=[membership.tenant.slug])
    current = state.get("current")
    query = filters.data.copy()
    if current is not None:
        query["item"] = current.pk
    return redirect(f"{target}?{query.urlencode()}" if query else target)


@require_GET
@tenant_view
@refused_when_blind("the review flow shows why the policy sent each memory to review, quoting its votes")
def review_flow(request: HttpRequest, membership) -> HttpResponse:
    require_reviewer(membership)
    query = request.GET.copy()
    item = params.object_id(query, "item", lists.Memory)
    query.pop("item", None)
    filters = _filters(query, membership)
    current = get_memory_for(membership, item) if item else None
    return page(request, membership, TEMPLATE, **_state(request, membership, filters, current=current))


@require_POST
@tenant_view
@refused_when_blind("the review flow decides memories")
def flow_decide(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_reviewer(membership)
    memory = get_memory_for(membership, pk)
    filters = _filters(QueryDict(request.POST.get("filters", "")), membership)
    key = request.POST.get("key", "")
    if key == "s":
        flow.skip(memory, user=request.user)
        skipped = request.session.get(_skipped_key(membership), [])
        request.session[_skipped_key(membership)] = [*skipped, memory.pk][-SKIPS_KEPT:]
        return _answer(
            request, membership, filters, notice=f"Skipped “{memory.subject}”: it stays in the queue."
        )
    version = params.object_id(request.POST, "seen_version", lists.Memory, "row_version")
    try:
        decided = flow.decide(
            memory=memory, key=key, user=request.user, reason=request.POST.get("reason", ""),
            shown=request.POST.get("shown", ""), seen_version=version, can_lead=membership.can_lead,
            request_id=request.request_id,
        )  # fmt: skip
    except flow.NotShown as exc:  # the same item again, for the reviewer to read and decide
        again = memory if memory.status == lists.MemoryStatus.NEEDS_REVIEW else None
        return _answer(
            request,
            membership,
            filters,
            current=again,
            problem=f"Nothing was changed on “{memory.subject}”: {exc}.",
        )
    except (LifecycleError, ClaimError) as exc:
        return _answer(
            request, membership, filters, problem=f"Nothing was changed on “{memory.subject}”: {exc}"
        )
    if decided.move is not None:
        request.session[_last_key(membership)] = decided.move.pk
    return _answer(request, membership, filters, notice=decided.message)


@require_POST
@tenant_view
@refused_when_blind("the review flow decides memories")
def flow_undo(request: HttpRequest, membership) -> HttpResponse:
    require_reviewer(membership)
    filters = _filters(QueryDict(request.POST.get("filters", "")), membership)
    last = request.session.get(_last_key(membership))
    if last is None:
        return _answer(request, membership, filters, problem="There is no decision of yours to undo here.")
    try:
        memory = flow.undo(
            tenant=membership.tenant, move_id=last, user=request.user, request_id=request.request_id
        )
    except LifecycleError as exc:
        request.session.pop(_last_key(membership), None)
        return _answer(request, membership, filters, problem=f"Not undone: {exc}")
    request.session.pop(_last_key(membership), None)
    return _answer(
        request,
        membership,
        filters,
        current=memory,
        notice=f"Undone: “{memory.subject}” is back in the queue.",
    )
