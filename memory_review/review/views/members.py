"""Who is in a tenant and its security settings, for its admins (leads see them and confirm):
every change goes through compliance/security.py, which waits for a second lead or admin where
the tenant keeps the two-person rule."""

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from memory_review import textlimits
from memory_review.compliance import dual_control, security
from memory_review.lifecycle import LifecycleError
from memory_review.memories.models import DualControl
from memory_review.tenancy.models import Membership, Role

from .base import page, tenant_view

SECURITY_KINDS = (DualControl.Kind.SETTINGS, DualControl.Kind.MEMBERSHIP)


class RuleForm(forms.Form):
    two_person_rule = forms.TypedChoiceField(
        choices=[("on", "on"), ("off", "off")], coerce=lambda value: value == "on", label="Two-person rule"
    )
    reason = textlimits.CharField(max_length=500, strip=True, label="Why")


class MemberForm(forms.Form):
    username = textlimits.CharField(max_length=150, strip=True, label="Username")
    role = forms.ChoiceField(choices=[*Role.choices, ("", "Not a member (remove)")], required=False)
    reason = textlimits.CharField(max_length=500, strip=True, label="Why")

    def clean_username(self):
        person = get_user_model().objects.filter(username=self.cleaned_data["username"]).first()
        if person is None:
            raise forms.ValidationError("no one has this username: they sign up or are created first")
        return person


def _may_see(membership) -> None:
    if not membership.can_lead:
        raise PermissionDenied("members and security settings are for the tenant's admins and leads")


def _may_change(membership) -> None:
    if membership.role != Role.ADMIN:
        raise PermissionDenied("only a tenant admin may change its members or security settings")


@require_GET
@tenant_view
def member_list(request: HttpRequest, membership) -> HttpResponse:
    _may_see(membership)
    return _members_page(request, membership)


def _members_page(request, membership, *, rule_form=None, member_form=None, status=200) -> HttpResponse:
    tenant = membership.tenant
    changes = DualControl.objects.for_tenant(tenant).filter(kind__in=SECURITY_KINDS)
    people = {
        m.user_id: m.user
        for m in Membership.objects.filter(tenant=tenant).select_related("user").order_by("user__username")
    }
    history = list(changes.select_related("requested_by", "decided_by").order_by("-requested_at")[:50])
    named = {row.change["user"] for row in history if row.kind == DualControl.Kind.MEMBERSHIP}
    people_named = {u.pk: u for u in get_user_model().objects.filter(pk__in=named - people.keys())}
    for row in history:
        row.member = people.get(row.change.get("user")) or people_named.get(row.change.get("user"))
    return page(
        request, membership, "review/members.html", status=status,
        members=Membership.objects.filter(tenant=tenant).select_related("user").order_by("user__username"),
        pending=dual_control.pending(tenant).filter(kind__in=SECURITY_KINDS), history=history,
        rule_form=rule_form or RuleForm(auto_id="rule-%s"),
        member_form=member_form or MemberForm(auto_id="member-%s"), may_change=membership.role == Role.ADMIN,
        second_needed=security.needs_second_person(tenant), roles=Role.choices, now=timezone.now(),
    )  # fmt: skip


@require_POST
@tenant_view
def member_rule(request: HttpRequest, membership) -> HttpResponse:
    _may_change(membership)
    form = RuleForm(request.POST, auto_id="rule-%s")
    if not form.is_valid():
        return _members_page(request, membership, rule_form=form, status=400)
    return _changed(request, membership, security.settings_change, **form.cleaned_data)


@require_POST
@tenant_view
def member_change(request: HttpRequest, membership) -> HttpResponse:
    _may_change(membership)
    form = MemberForm(request.POST, auto_id="member-%s")
    if not form.is_valid():
        return _members_page(request, membership, member_form=form, status=400)
    data = form.cleaned_data
    return _changed(
        request, membership, security.membership_change, user=data["username"], role=data["role"] or None,
        reason=data["reason"],
    )  # fmt: skip


def _changed(request: HttpRequest, membership, change, **arguments) -> HttpResponse:
    try:
        done = change(tenant=membership.tenant, by=request.user, **arguments)
    except LifecycleError as exc:
        messages.error(request, f"Nothing was changed: {exc}")
    else:
        if done.outcome == security.APPLIED:
            messages.success(request, "Changed.")
        else:
            until = f"{done.expires_at:%Y-%m-%d %H:%M} UTC"
            messages.success(request, f"Asked: another lead or admin must confirm it by {until}.")
    return redirect("member-list", membership.tenant.slug)
