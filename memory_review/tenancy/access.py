"""Who may see a tenant, and in which role. Another tenant's object is a 404, never a 403."""

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404

from memory_review.integrity.db_context import set_tenant

from .models import Membership, Tenant


def get_membership(user: AbstractBaseUser, slug: str) -> Membership:
    """The user's membership in the tenant named by `slug`, or 404 when there is none."""
    if not user.is_authenticated:
        raise Http404("No such tenant")
    membership = (
        Membership.objects.select_related("tenant")
        .filter(tenant__slug=slug, tenant__is_active=True, user=user)
        .first()
    )
    if membership is None:
        raise Http404("No such tenant")
    set_tenant(membership.tenant_id)  # cleared by RequestContextMiddleware
    return membership


def tenants_for(user: AbstractBaseUser) -> list[Tenant]:
    return [
        m.tenant
        for m in Membership.objects.select_related("tenant").filter(user=user, tenant__is_active=True)
    ]
