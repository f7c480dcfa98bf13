"""Webhook endpoints, for tenant admins: register one (its secret shown once), read its delivery
log (status, response code, latency, each try), send one delivery again, disable, enable or
remove it (agents/webhooks.py)."""

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from memory_review import params, textlimits
from memory_review.agents import webhooks
from memory_review.agents.models import WebhookDelivery
from memory_review.lifecycle import Actor

from ..access import require_admin
from .base import page, tenant_view

KIND_WORDS = {
    "created": "created (a new memory)",
    "rewritten": "rewritten (content replaced by its successor)",
    "moved": "moved (restored, frozen, approved, contradicted…)",
    "expired": "expired (hard TTL)",
    "forgotten": "forgotten",
    "erased": "erased (right to forget)",
    "health.regressed": "health.regressed (a notice: memory health got worse beyond chance)",
}


class EndpointForm(forms.Form):
    url = textlimits.CharField(max_length=500, strip=True, label="URL (https://…)")
    kinds = forms.MultipleChoiceField(
        required=False,
        choices=[(kind, KIND_WORDS[kind]) for kind in webhooks.EVENT_KINDS],
        widget=forms.CheckboxSelectMultiple,
        label="Kinds (none ticked: every kind of change; a notice only when ticked)",
    )
    description = textlimits.CharField(max_length=120, required=False, strip=True, label="What it is for")


def _list_page(request, membership, form, *, status=200, new=None, secret=None):
    rows = webhooks.endpoints(membership.tenant)
    return page(
        request,
        membership,
        "review/webhooks.html",
        status=status,
        endpoints=rows,
        form=form,
        new=new,
        secret=secret,
    )


@require_GET
@tenant_view
def webhook_list(request: HttpRequest, membership) -> HttpResponse:
    require_admin(membership, "webhooks are managed by tenant admins")
    return _list_page(request, membership, EndpointForm())


@require_POST
@tenant_view
def webhook_new(request: HttpRequest, membership) -> HttpResponse:
    require_admin(membership, "webhooks are managed by tenant admins")
    form = EndpointForm(request.POST)
    if not form.is_valid():
        return _list_page(request, membership, form, status=400)
    try:
        endpoint, secret = webhooks.endpoint_create(
            membership.tenant,
            url=form.cleaned_data["url"],
            kinds=form.cleaned_data["kinds"],
            description=form.cleaned_data["description"],
            by=str(Actor.user(request.user)),
        )
    except webhooks.EndpointRefused as exc:
        form.add_error(exc.field if exc.field in form.fields else None, f"The URL {exc.problem}")
        return _list_page(request, membership, form, status=400)
    # Shown on this answer only: a signing secret is never displayed again.
    return _list_page(request, membership, EndpointForm(), new=endpoint, secret=secret)


def _endpoint(membership, pk: int):
    return get_object_or_404(webhooks.endpoints(membership.tenant), pk=pk)


@require_GET
@tenant_view
def webhook_detail(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_admin(membership, "webhooks are managed by tenant admins")
    endpoint = _endpoint(membership, pk)
    before = params.object_id(request.GET, "before", WebhookDelivery)
    rows, next_before = webhooks.log(endpoint, before=before, limit=50)
    return page(
        request,
        membership,
        "review/webhook_detail.html",
        endpoint=endpoint,
        deliveries=rows,
        next_before=next_before,
        kind_words=KIND_WORDS,
    )


@require_POST
@tenant_view
def webhook_state(request: HttpRequest, membership, pk: int) -> HttpResponse:
    """Disable, enable or remove, as the button says."""
    require_admin(membership, "webhooks are managed by tenant admins")
    endpoint, by = _endpoint(membership, pk), str(Actor.user(request.user))
    action = request.POST.get("action")
    try:
        if action == "disable":
            webhooks.endpoint_disable(endpoint, by=by, reason="disabled by an admin")
            messages.success(request, "Disabled: nothing is sent to it; what changes meanwhile waits for it.")
        elif action == "enable":
            waiting = webhooks.endpoint_enable(endpoint, by=by)
            messages.success(request, f"Enabled: {waiting} waiting deliveries are being sent.")
        elif action == "remove":
            webhooks.endpoint_remove(endpoint, by=by)
            messages.success(request, "Removed: nothing more is sent to it. Its log is kept.")
        else:
            messages.error(request, "Choose disable, enable or remove.")
    except webhooks.EndpointRefused as exc:
        messages.error(request, f"The {exc.field} {exc.problem}.")
    return redirect("webhook-detail", membership.tenant.slug, endpoint.pk)


@require_POST
@tenant_view
def webhook_redeliver(request: HttpRequest, membership, pk: int, delivery: int) -> HttpResponse:
    require_admin(membership, "webhooks are managed by tenant admins")
    row = get_object_or_404(
        WebhookDelivery.objects.for_tenant(membership.tenant).select_related("endpoint"),
        pk=delivery,
        endpoint_id=pk,
    )
    try:
        webhooks.redeliver(row, by=str(Actor.user(request.user)))
        messages.success(request, f"Delivery {row.msg_id} is being sent again, under the same webhook-id.")
    except webhooks.EndpointRefused as exc:
        messages.error(request, f"The {exc.field} {exc.problem}.")
    return redirect("webhook-detail", membership.tenant.slug, pk)
