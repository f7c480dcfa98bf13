"""The review team (workflow/assignment.py): each reviewer's pace and what waits for them, the
oldest item in the queue against the review target, the rules that hand items out; and a lead's
hand assignment of one item."""

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from memory_review import params, textlimits
from memory_review.calibration import figures
from memory_review.lifecycle import LifecycleError
from memory_review.memories.models import Memory, SourceEvent
from memory_review.tenancy.models import Membership
from memory_review.tenancy.names import display_name
from memory_review.workflow import assignment
from memory_review.workflow.models import AssignmentRule, ReviewTarget

from .. import team_page
from ..access import get_memory_for, require_lead, require_reviewer
from .base import page, safe_next, tenant_view
from .blind import refused_when_blind


class RuleForm(forms.Form):
    to = forms.TypedChoiceField(coerce=int, label="Give to")
    channel = forms.ChoiceField(required=False, choices=[("", "Any channel"), *SourceEvent.Source.choices])
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Memory.Kind.choices])
    subject = textlimits.CharField(required=False, max_length=200, strip=True, label="Subject contains")

    def __init__(self, *args, reviewers, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["to"].choices = reviewers


class TargetForm(forms.Form):
    hours = forms.IntegerField(
        min_value=1, max_value=ReviewTarget.HOURS_MAX, label="Review target, hours",
        error_messages={"required": "Say how many hours an item may wait before it is late."},
    )  # fmt: skip


def _reviewers(tenant) -> list[tuple[int, str]]:
    return [(m.user_id, display_name(m.user)) for m in assignment.reviewers(tenant)]


@require_GET
@tenant_view
@refused_when_blind("the team page counts each reviewer's decisions on what the policy sent to review")
def team(request: HttpRequest, membership) -> HttpResponse:
    require_reviewer(membership)
    return _team_page(request, membership)


def _team_page(request, membership, *, form=None, target_form=None, status=200) -> HttpResponse:
    tenant, now = membership.tenant, timezone.now()
    past, hours = assignment.past_target(tenant, now=now), assignment.target_hours(tenant.pk)
    shown = figures.read("team_waiting", tenant)
    pace = assignment.team(tenant, waiting=team_page.waiting(shown), now=now)
    return page(
        request, membership, "review/team.html", status=status, pace=pace, shown=shown,
        rules=assignment.rules(tenant).order_by("created_at"), oldest=assignment.oldest_waiting(tenant),
        late=bool(past), past_target=past, target_hours=hours,  # the oldest is late when any item is
        form=form or RuleForm(reviewers=_reviewers(tenant)),
        target_form=target_form or TargetForm(initial={"hours": hours}),
    )  # fmt: skip


@require_POST
@tenant_view
def rule_new(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    tenant = membership.tenant
    form = RuleForm(request.POST, reviewers=_reviewers(tenant))
    if not form.is_valid():
        return _team_page(request, membership, form=form, status=400)
    data = form.cleaned_data
    to = get_object_or_404(Membership.objects.filter(tenant=tenant), user_id=data["to"]).user
    try:
        assignment.rule_create(
            tenant=tenant,
            to=to,
            by=request.user,
            channel=data["channel"],
            kind=data["kind"],
            subject=data["subject"],
        )
    except LifecycleError as exc:
        form.add_error(None, str(exc))
        return _team_page(request, membership, form=form, status=400)
    messages.success(request, "The rule hands out what matches it from now on, and what waits already.")
    return redirect("review-team", tenant.slug)


@require_POST
@tenant_view
def target_set(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    form = TargetForm(request.POST)
    if not form.is_valid():
        return _team_page(request, membership, target_form=form, status=400)
    assignment.set_target(tenant=membership.tenant, hours=form.cleaned_data["hours"], by=request.user)
    hours = form.cleaned_data["hours"]
    messages.success(request, f"Items waiting longer than {hours} h are marked late from now on.")
    return redirect("review-team", membership.tenant.slug)


@require_POST
@tenant_view
def rule_remove(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_lead(membership)
    rule = get_object_or_404(AssignmentRule.objects.for_tenant(membership.tenant), pk=pk)
    assignment.rule_remove(rule=rule)
    messages.success(request, "Rule removed: what it handed out is unassigned again, unless given by hand.")
    return redirect("review-team", membership.tenant.slug)


@require_POST
@tenant_view
def memory_assign(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_lead(membership)
    memory = get_memory_for(membership, pk)
    to = get_object_or_404(
        Membership.objects.filter(tenant=membership.tenant).select_related("user"),
        user_id=params.object_id(request.POST, "to", Membership, "user") or 0,
    ).user
    try:
        assignment.assign(memory=memory, to=to, by=request.user)
    except LifecycleError as exc:
        messages.error(request, f"Not assigned: {exc}")
    else:
        messages.success(request, f"“{memory.subject}” is now {display_name(to)}'s to review.")
    return redirect(safe_next(request, f"/t/{membership.tenant.slug}/memories/{memory.pk}/"))
