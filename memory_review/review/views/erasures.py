"""The right to forget on screen: a tenant admin asks for a person's data to be erased (typing
the id again to confirm); where the tenant keeps the two-person rule, another lead or admin
confirms; auditors see every erasure with its counts and proof. Also where any request waiting
for a second person is confirmed or cancelled (a memory's forgetting, too)."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from memory_review import textlimits
from memory_review.compliance import dual_control
from memory_review.compliance.erasure import erase_subject
from memory_review.lifecycle import Actor, LifecycleError
from memory_review.memories.models import DualControl, Erasure
from memory_review.tenancy.models import Role
from memory_review.tenancy.names import actor_names

from .base import page, safe_next, tenant_view

ERASE_OR_FORGET = (DualControl.Kind.ERASE, DualControl.Kind.FORGET)  # the rest: the members page


class ErasureForm(forms.Form):
    user_id = textlimits.CharField(max_length=128, strip=True, label="User id")
    confirm_user_id = textlimits.CharField(max_length=128, strip=True, label="Type the user id again")
    reason = textlimits.CharField(
        max_length=500, strip=True, label="Reason (kept with the proof; do not quote the data)"
    )

    def clean(self):
        data = super().clean()
        if data.get("user_id") and data.get("user_id") != data.get("confirm_user_id"):
            raise forms.ValidationError("the two user ids differ: nothing was erased")
        return data


def _can_see(membership) -> None:
    if not (membership.can_audit or membership.can_lead):
        raise PermissionDenied("erasures are for admins, leads and compliance auditors")


@require_GET
@tenant_view
def erasure_list(request: HttpRequest, membership) -> HttpResponse:
    _can_see(membership)
    return _erasure_page(request, membership, ErasureForm())


def _erasure_page(request: HttpRequest, membership, form: ErasureForm, status: int = 200) -> HttpResponse:
    erasures = list(Erasure.objects.for_tenant(membership.tenant).order_by("-created_at")[:100])
    names = actor_names([*(e.requested_by for e in erasures), *(e.confirmed_by for e in erasures)])
    for erasure in erasures:
        erasure.requested_name = names.get(erasure.requested_by, erasure.requested_by)
        erasure.confirmed_name = names.get(erasure.confirmed_by)
    return page(
        request,
        membership,
        "review/erasures.html",
        status=status,
        erasures=erasures,
        pending=dual_control.pending(membership.tenant).filter(kind__in=ERASE_OR_FORGET),
        history=DualControl.objects.for_tenant(membership.tenant)
        .filter(kind__in=ERASE_OR_FORGET)
        .select_related("requested_by", "decided_by", "memory")
        .order_by("-requested_at")[:50],
        form=form,
        may_erase=membership.role == Role.ADMIN,
        now=timezone.now(),
    )


@require_POST
@tenant_view
def erasure_request(request: HttpRequest, membership) -> HttpResponse:
    if membership.role != Role.ADMIN:
        raise PermissionDenied("only a tenant admin may ask for a person's data to be erased")
    form = ErasureForm(request.POST)
    if not form.is_valid():
        return _erasure_page(request, membership, form, status=400)
    tenant, data = membership.tenant, form.cleaned_data
    try:
        if tenant.two_person_rule:
            asked = dual_control.request_erasure(
                tenant=tenant, user_id=data["user_id"], reason=data["reason"], by=request.user
            )
            until = f"{asked.expires_at:%Y-%m-%d %H:%M} UTC"
            messages.success(
                request,
                f"Erasure of {asked.user_id} asked: a second lead or admin must confirm it by {until}.",
            )
        else:
            done = erase_subject(
                tenant=tenant,
                user_id=data["user_id"],
                reason=data["reason"],
                requested_by=str(Actor.user(request.user)),
            )
            messages.success(
                request, f"Erased: {done.memories_erased} memories, {done.events_erased} events."
            )
    except LifecycleError as exc:
        messages.error(request, f"Nothing was erased: {exc}")
    return redirect("erasure-list", tenant.slug)


def _decision(request: HttpRequest, membership, pk: int, decide) -> HttpResponse:
    asked = get_object_or_404(DualControl.objects.for_tenant(membership.tenant), pk=pk)
    fallback = redirect("erasure-list", membership.tenant.slug).url
    try:
        done = decide(asked)
    except LifecycleError as exc:
        messages.error(request, f"Nothing was changed: {exc}")
    else:
        messages.success(request, f"{done.get_kind_display()}: {done.outcome}.")
    return redirect(safe_next(request, fallback))


@require_POST
@tenant_view
def request_confirm(request: HttpRequest, membership, pk: int) -> HttpResponse:
    if not membership.can_lead:
        raise PermissionDenied("only a lead or an admin may confirm")

    def confirm(asked):
        return dual_control.confirm(request=asked, by=request.user, request_id=request.request_id)

    return _decision(request, membership, pk, confirm)


@require_POST
@tenant_view
def request_cancel(request: HttpRequest, membership, pk: int) -> HttpResponse:
    def cancel(asked):
        if asked.requested_by_id != request.user.pk and not membership.can_lead:
            raise PermissionDenied("only the person who asked, a lead or an admin may cancel")
        return dual_control.cancel(request=asked, by=request.user)

    return _decision(request, membership, pk, cancel)
