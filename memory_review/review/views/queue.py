"""The review queue and the list of all memories: filtered, keyset-paged lists, a queue that
tells the reviewer what colleagues and the policy took away, and bulk actions on exactly the
filtered set a lead confirmed."""

import re

from django import forms
from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_POST

from memory_review import textlimits

from .. import lists, rows
from ..access import require_lead
from ..decisions import ACTIONS, bulk_decide
from ..paging import BadCursor
from .base import page, partial_or_page, tenant_view

ID = re.compile(r"[0-9]{1,18}")  # what a row id can be (str.isdigit() also takes "²")
BULK_ACTIONS = [(name, action.label) for name, action in ACTIONS.items() if name != "forget"]
BULK_SALT = "memory-review.bulk"
BULK_MAX_AGE_S = 3600


def _list_page(request: HttpRequest, membership, *, base, filters, template: str, **context) -> HttpResponse:
    if not filters.is_valid():
        return page(request, membership, template, status=400, filters=filters, listing=None, **context)
    try:
        listing = lists.listing(
            base, filters, user=request.user, after=request.GET.get("after"), before=request.GET.get("before")
        )
    except BadCursor as exc:
        filters.add_error(None, f"{exc}: start again from the first page")
        return page(request, membership, template, status=400, filters=filters, listing=None, **context)
    query = request.GET.copy()
    for cursor in ("after", "before"):
        query.pop(cursor, None)
    return page(
        request,
        membership,
        partial_or_page(request, template, "results"),
        filters=filters,
        listing=listing,
        query=query.urlencode(),
        row_context=rows.row_context(request, membership, context["list_name"], query=query.urlencode()),
        loaded_at=timezone.now(),
        bulk_actions=BULK_ACTIONS,
        **context,
    )


@require_GET
@tenant_view
def review_queue(request: HttpRequest, membership) -> HttpResponse:
    base = lists.queue_memories(membership.tenant)
    filters = lists.QueueFilters(request.GET)
    return _list_page(
        request, membership, base=base, filters=filters, template="review/queue.html", list_name="queue"
    )


@require_GET
@tenant_view
def memory_list(request: HttpRequest, membership) -> HttpResponse:
    base = lists.Memory.objects.for_tenant(membership.tenant)
    filters = lists.MemoryFilters(request.GET)
    return _list_page(
        request,
        membership,
        base=base,
        filters=filters,
        template="review/memory_list.html",
        list_name="memories",
    )


@require_GET
@tenant_view
def queue_changes(request: HttpRequest, membership) -> HttpResponse:
    """Polled by the open queue: rows taken away since it loaded, claims, and new arrivals."""
    shown = [int(pk) for pk in request.GET.get("shown", "").split(",") if ID.fullmatch(pk)][: lists.PAGE_SIZE]
    try:
        since = parse_datetime(request.GET.get("since", ""))
    except ValueError:  # well formed but not a real time: count no arrivals rather than fail
        since = None
    changes = lists.queue_changes(membership.tenant, viewer=request.user, shown=shown, since=since)
    return page(
        request,
        membership,
        "review/queue.html#changes",
        changes=changes,
        shown=",".join(map(str, shown)),
        since=request.GET.get("since", ""),
    )


class BulkForm(forms.Form):
    list_name = forms.ChoiceField(choices=[("queue", "queue"), ("memories", "memories")])
    action = forms.ChoiceField(choices=BULK_ACTIONS)
    reason = textlimits.CharField(max_length=1000, required=False, strip=True)


def _bulk_set(request: HttpRequest, membership, list_name: str):
    if list_name == "queue":
        return lists.queue_memories(membership.tenant), lists.QueueFilters(request.POST)
    return lists.Memory.objects.for_tenant(membership.tenant), lists.MemoryFilters(request.POST)


@require_POST
@tenant_view
def bulk_preview(request: HttpRequest, membership) -> HttpResponse:
    """Show exactly which memories the action would touch, and how many, before anything moves."""
    require_lead(membership)
    form = BulkForm(request.POST)
    if not form.is_valid():
        return page(request, membership, "review/bulk.html", status=400, form=form)
    base, filters = _bulk_set(request, membership, form.cleaned_data["list_name"])
    if not filters.is_valid():
        return page(request, membership, "review/bulk.html", status=400, form=form, filters=filters)
    chosen = lists.filtered(base, filters, user=request.user).order_by("id")
    total = chosen.count()
    if total > settings.REVIEW_BULK_MAX:
        form.add_error(
            None,
            f"{total} memories match; a bulk action takes at most {settings.REVIEW_BULK_MAX}. "
            "Narrow the filter.",
        )
        return page(request, membership, "review/bulk.html", status=400, form=form, filters=filters)
    memories = list(chosen.only("id", "subject", "status", "row_version", "kind"))
    ticket = signing.dumps(
        {
            "action": form.cleaned_data["action"],
            "reason": form.cleaned_data["reason"],
            "list": form.cleaned_data["list_name"],
            "memories": {m.pk: m.row_version for m in memories},
        },
        salt=BULK_SALT,
        compress=True,
    )
    return page(
        request,
        membership,
        "review/bulk.html",
        form=form,
        filters=filters,
        memories=memories,
        ticket=ticket,
        action=ACTIONS[form.cleaned_data["action"]],
    )


@require_POST
@tenant_view
def bulk_apply(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    try:
        ticket = signing.loads(request.POST.get("ticket", ""), salt=BULK_SALT, max_age=BULK_MAX_AGE_S)
    except signing.BadSignature:
        return page(
            request,
            membership,
            "review/bulk.html",
            status=400,
            problem="This confirmation is damaged or more than an hour old: choose the set again.",
        )
    result = bulk_decide(
        memories={int(pk): version for pk, version in ticket["memories"].items()},
        queryset=lists.Memory.objects.for_tenant(membership.tenant),
        action=ticket["action"],
        user=request.user,
        reason=ticket["reason"],
        request_id=request.request_id,
    )
    return page(
        request,
        membership,
        "review/bulk.html",
        result=result,
        action=ACTIONS[ticket["action"]],
        list_name=ticket["list"],
    )
