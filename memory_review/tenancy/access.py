"""Who may see a tenant, and in which role. Another tenant's object is a 404, never a 403."""

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from .db_context import set_tenant
from .models import Membership, Role, Tenant

# What each capability needs. Auditors read and export, never change; labelers label, never
# change memories.
CAN_REVIEW = frozenset({Role.REVIEWER, Role.LEAD, Role.ADMIN})


def get_membership(user: AbstractBaseUser, slug: str) -> Membership:
    """The user's membership in the tenant named by `slug`, or 404 when there is none."""
    if not user.is_authenticated:
        raise Http404("No such tenant")
    membership = Membership.objects.select_related("tenant").filter(tenant__slug=slug, user=user).first()
    if membership is None:
        raise Http404("No such tenant")
    set_tenant(membership.tenant_id)  # cleared by RequestContextMiddleware
    return membership


def require_role(membership: Membership, allowed: frozenset[str]) -> None:
    if membership.role not in allowed:
        raise PermissionDenied(f"The {membership.role} role cannot do this")


def tenants_for(user: AbstractBaseUser) -> list[Tenant]:
    return [m.tenant for m in Membership.objects.select_related("tenant").filter(user=user)]
