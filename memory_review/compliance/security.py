"""A tenant's security settings and who its members are, changed only here (issue 14, item 5).

Where the tenant keeps the two-person rule, a change waits for a second lead or admin, as an
erasure does (compliance/dual_control.py confirms it); where it does not, it is made at once.
Either way the change is a DualControl row, `confirmed` or `applied`, saying who asked, who
confirmed and what changed from what: the rule's history that verification reads back
(`rule_problem`, registered with the audit's checks), so switching the rule off, erasing alone
and switching it back on cannot go unnoticed. The Django admin shows tenants and memberships
read-only; the members page and `manage.py tenant_member` come here.
"""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory_review.audit.models import Transition
from memory_review.lifecycle import LifecycleError
from memory_review.memories.models import DualControl, Erasure
from memory_review.tenancy.models import Membership, Role, Tenant

APPLIED = "applied"  # made at once: the tenant did not keep the rule, so no second person was needed
DONE = ("confirmed", APPLIED)
ROLES = tuple(Role.values)


class SecurityChangeRefused(LifecycleError):
    pass


def settings_change(*, tenant: Tenant, by, two_person_rule: bool, reason: str) -> DualControl:
    """Switch the two-person rule on or off. `by` is a tenant admin, or None for the command line
    (the host's operator)."""
    _may_ask(tenant, by)
    if bool(two_person_rule) == tenant.two_person_rule:
        state = "keeps" if tenant.two_person_rule else "does not keep"
        raise SecurityChangeRefused(f"{tenant.slug} already {state} the two-person rule: nothing to change")
    change = {"two_person_rule": [tenant.two_person_rule, bool(two_person_rule)]}
    return _change(tenant, DualControl.Kind.SETTINGS, change, reason=reason, by=by)


def membership_change(*, tenant: Tenant, by, user, role: str | None, reason: str) -> DualControl:
    """Make `user` a member in `role`, change their role, or (role None) remove them."""
    _may_ask(tenant, by)
    if role is not None and role not in ROLES:
        raise SecurityChangeRefused(f"{role!r} is not a role: one of {', '.join(ROLES)}")
    current = Membership.objects.filter(tenant=tenant, user=user).values_list("role", flat=True).first()
    if current == role:
        raise SecurityChangeRefused(
            f"{user.username} is already {role or 'not a member'} in {tenant.slug}: nothing to change"
        )
    if by is not None and user.pk == by.pk and role != Role.ADMIN:
        raise SecurityChangeRefused("an admin cannot take their own admin role away: another admin can")
    change = {"user": user.pk, "role": [current, role]}
    return _change(tenant, DualControl.Kind.MEMBERSHIP, change, reason=reason, by=by)


def _may_ask(tenant: Tenant, by) -> None:
    if by is None:
        return  # the command line: the host's operator
    if not Membership.objects.filter(tenant=tenant, user=by, role=Role.ADMIN).exists():
        raise SecurityChangeRefused("only a tenant admin may change its security settings or members")


def needs_second_person(tenant: Tenant) -> bool:
    """The rule, where someone can confirm: a tenant with no lead or admin yet (a new one, set up
    from the command line) has nobody to ask."""
    leads = Membership.objects.filter(tenant=tenant, role__in=(Role.LEAD, Role.ADMIN))
    return tenant.two_person_rule and leads.exists()


@transaction.atomic
def _change(tenant: Tenant, kind: str, change: dict, *, reason: str, by) -> DualControl:
    if not (reason or "").strip():
        raise SecurityChangeRefused("say why: the reason is kept with the change")
    now = timezone.now()
    row = DualControl(
        tenant=tenant, kind=kind, change=change, reason=reason.strip(), requested_by=by, requested_at=now,
        expires_at=now + DualControl.LIFETIME,
    )  # fmt: skip
    if needs_second_person(tenant):
        row.save()
        return row
    row.decided_at, row.outcome = now, APPLIED
    row.save()
    apply(row)
    return row


def apply(row: DualControl) -> None:
    """Make the change a request describes (now confirmed, or applied at once)."""
    tenant = Tenant.objects.select_for_update().get(pk=row.tenant_id)
    if row.kind == DualControl.Kind.SETTINGS:
        before, after = row.change["two_person_rule"]
        if tenant.two_person_rule != before:
            raise SecurityChangeRefused("the two-person rule changed since this was asked: ask again")
        tenant.two_person_rule, tenant.two_person_since = after, row.decided_at
        tenant.save(update_fields=["two_person_rule", "two_person_since"])
        return
    before, after = row.change["role"]
    # At most one (tenant, user) row; no row limit beside FOR UPDATE, which Oracle refuses.
    found = next(
        iter(Membership.objects.select_for_update().filter(tenant=tenant, user_id=row.change["user"])), None
    )
    if (found.role if found else None) != before:
        raise SecurityChangeRefused("this member's role changed since this was asked: ask again")
    if after is None:
        found.delete()
    elif found is None:
        Membership.objects.create(tenant=tenant, user_id=row.change["user"], role=after)
    else:
        found.role = after
        found.save(update_fields=["role"])


def check_confirmer(row: DualControl, by) -> None:
    """A membership change is never confirmed by the member it changes."""
    if row.kind == DualControl.Kind.MEMBERSHIP and row.change["user"] == by.pk:
        raise SecurityChangeRefused("a change to your own membership needs someone else to confirm it")


# -- the rule's history, for verification ---------------------------------------------------------


def rule_history(tenant: Tenant) -> tuple[bool, list[tuple[datetime, bool]]]:
    """The rule's value before any recorded change, and each change made since (time, value)."""
    changes = (
        DualControl.objects.for_tenant(tenant)
        .filter(kind=DualControl.Kind.SETTINGS, outcome__in=DONE)
        .order_by("decided_at", "pk")
        .values_list("decided_at", "change")
    )
    history = [(at, change["two_person_rule"][1]) for at, change in changes]
    first = changes.first()
    return (first[1]["two_person_rule"][0] if first else tenant.two_person_rule), history


def rule_at(initial: bool, history: list[tuple[datetime, bool]], when: datetime) -> bool:
    held = initial
    for at, value in history:
        if at > when:
            break
        held = value
    return held


def rule_problem(tenant: Tenant) -> str | None:
    """Whether the two-person rule held for every erasure and every forgetting, and was changed
    only through this module (verification's rule; audit/checks.py)."""
    initial, history = rule_history(tenant)
    if history and tenant.two_person_rule != history[-1][1]:
        said = "on" if history[-1][1] else "off"
        return (
            f"the two-person rule is {'on' if tenant.two_person_rule else 'off'}, but the last change "
            f"recorded switched it {said}: it was switched around the audited path"
        )
    if not initial and not any(value for _, value in history):
        return None  # never kept: nothing below can break it
    confirmed = {
        row.erasure_id: row
        for row in DualControl.objects.for_tenant(tenant).filter(
            kind=DualControl.Kind.ERASE, outcome="confirmed", erasure__isnull=False
        )
    }
    for erasure in Erasure.objects.for_tenant(tenant).order_by("pk"):
        if not rule_at(initial, history, erasure.created_at):
            continue
        asked = confirmed.get(erasure.pk)
        if (
            asked is None
            or asked.decided_by_id == asked.requested_by_id
            or erasure.confirmed_by != f"user:{asked.decided_by_id}"
        ):
            return (
                f"erasure {erasure.pk} of {erasure.created_at:%Y-%m-%d %H:%M} UTC was made while the "
                "two-person rule held, but no second lead or admin confirmed it"
            )
    return _forgotten_alone(tenant, initial, history)


def _forgotten_alone(tenant: Tenant, initial: bool, history) -> str | None:
    confirmed = set(
        DualControl.objects.for_tenant(tenant)
        .filter(kind=DualControl.Kind.FORGET, outcome="confirmed")
        .values_list("memory_id", "decided_by_id")
    )
    forgets = (
        Transition.objects.for_tenant(tenant)
        .filter(action="forget")
        .order_by("seq")
        .values_list("seq", "memory_id", "actor", "created_at")
    )
    for seq, memory_id, actor, at in forgets.iterator():
        if not rule_at(initial, history, at):
            continue
        by = int(actor.removeprefix("user:")) if actor.startswith("user:") else None
        if (memory_id, by) not in confirmed:
            return (
                f"memory {memory_id} was forgotten (transition #{seq}, {at:%Y-%m-%d %H:%M} UTC) while the "
                "two-person rule held, but no second lead or admin confirmed it"
            )
    return None
