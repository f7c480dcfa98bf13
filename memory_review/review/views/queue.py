"""The review queue and the list of all memories: filtered, keyset-paged lists, a queue that
tells the reviewer what colleagues and the policy took away, and bulk actions on exactly the
filtered set a lead confirmed."""

from django import forms
from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from memory_review import params, textlimits
from memory_review.memories import tallies
from memory_review.workflow.decisions import ACTIONS, bulk_actions_for, bulk_decide

from .. import lists, rows
from ..access import require_lead
from ..paging import BadCursor
from .base import page, partial_or_page, tenant_view
from .blind import refused_when_blind

BULK_ACTIONS = [(name, action.label) for name, action in ACTIONS.items() if name != "forget"]
BULK_SALT = "memory-review.bulk"
BULK_MAX_AGE_S = 3600


def _list_page(
    request: HttpRequest, membership, *, base, filters, template: str, counts=None, **context
) -> HttpResponse:
    """`counts`: `base`'s memories by status (the writers' counts), so an unfiltered list's size
    and statuses need no count over its rows."""
    if not filters.is_valid():
        return page(request, membership, template, status=400, filters=filters, listing=None, **context)
    try:
        listing = lists.listing(
            base, filters, user=request.user, after=request.GET.get("after"),
            before=request.GET.get("before"), counts=counts,
        )  # fmt: skip
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
        # A bulk action offers only moves valid from every status in the set, and takes at most
        # REVIEW_BULK_MAX memories (a set counted past that is offered none).
        bulk_actions=[(name, action.label) for name, action in bulk_actions_for(listing.size.statuses)],
        bulk_max=settings.REVIEW_BULK_MAX,
        **context,
    )


@require_GET
@tenant_view
@refused_when_blind("the review queue says why the policy sent each memory to review, quoting its votes")
def review_queue(request: HttpRequest, membership) -> HttpResponse:
    base = lists.queue_memories(membership.tenant)
    filters = lists.QueueFilters(request.GET, tenant=membership.tenant)
    waiting = tallies.counts(membership.tenant).get(lists.MemoryStatus.NEEDS_REVIEW, 0)
    return _list_page(
        request, membership, base=base, filters=filters, template="review/queue.html", list_name="queue",
        counts={lists.MemoryStatus.NEEDS_REVIEW: waiting},
    )  # fmt: skip


@require_GET
@tenant_view
@refused_when_blind("the list of all memories shows each one's status and why it moved, quoting its votes")
def memory_list(request: HttpRequest, membership) -> HttpResponse:
    base = lists.Memory.objects.for_tenant(membership.tenant)
    filters = lists.MemoryFilters(request.GET, tenant=membership.tenant)
    return _list_page(
        request,
        membership,
        base=base,
        filters=filters,
        template="review/memory_list.html",
        list_name="memories",
        counts=tallies.counts(membership.tenant),
    )


@require_GET
@tenant_view
@refused_when_blind("the review queue's updates say what the policy and reviewers did to each memory")
def queue_changes(request: HttpRequest, membership) -> HttpResponse:
    """Polled by the open queue: rows taken away since it loaded, claims, and new arrivals."""
    shown = params.object_ids(request.GET, "shown", lists.Memory, most=lists.PAGE_SIZE)
    since = params.moment(request.GET, "since")
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
        return lists.queue_memories(membership.tenant), lists.QueueFilters(
            request.POST, tenant=membership.tenant
        )
    tenant = membership.tenant
    return lists.Memory.objects.for_tenant(tenant), lists.MemoryFilters(request.POST, tenant=tenant)


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
