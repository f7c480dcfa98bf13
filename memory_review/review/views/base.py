"""What every tenant page shares: the membership resolved first (another tenant is a 404), and
in every template the tenant, the role (the header shows both) and whether the viewer works
blind."""

import logging
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from memory_review import params
from memory_review.audit import identities
from memory_review.integrity import seals
from memory_review.tenancy.access import get_membership
from memory_review.tenancy.models import Membership

from ..access import works_blind

logger = logging.getLogger(__name__)


def tenant_view(view):
    """Log in, then resolve the membership for the URL's tenant and pass it on. A parameter that
    cannot be read (memory_review/params.py), whichever code finds it, is a 400 naming it."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args, **kwargs):
        membership = get_membership(request.user, slug)
        if request.method not in SAFE_METHODS:
            refuse_borrowed_credentials(request.user, membership)
        try:
            params.screen(request)
            params.path_ids(kwargs)
            return view(request, membership, *args, **kwargs)
        except params.BadParameter as exc:
            return bad_request(request, membership, [str(exc)])

    return wrapper


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def refuse_borrowed_credentials(user, membership) -> None:
    """Before a person changes anything: their account and membership must be as last sealed. A
    password hash or a role written around the application (and put back after) acts for no one."""
    problem = identities.unsealed(user.pk, membership.tenant_id)
    if problem is None and not seals.unchanged(Membership, membership.pk, obj=membership):
        problem = "the membership was changed around the application"
    if problem is not None:
        logger.warning("user %s refused in tenant %s: %s", user.pk, membership.tenant_id, problem)
        raise PermissionDenied(f"Nothing was done: {problem}. Ask an administrator to run verify_audit.")


def bad_request(request: HttpRequest, membership, problems: list[str], *, back: str = "") -> HttpResponse:
    """A 400 saying what could not be read, with the way back."""
    if not back:
        home = reverse("tenant-home", args=[membership.tenant.slug])
        back = request.path if request.method == "GET" else home
    return page(request, membership, "400.html", status=400, problems=problems, back=back)


def page(request: HttpRequest, membership, template: str, *, status: int = 200, **context) -> HttpResponse:
    return render(
        request,
        template,
        {"membership": membership, "tenant": membership.tenant, "blind": works_blind(membership), **context},
        status=status,
    )


def partial_or_page(request: HttpRequest, template: str, partial: str) -> str:
    """htmx swaps a named region; a plain request gets the whole page."""
    return f"{template}#{partial}" if request.htmx and not request.htmx.boosted else template


def safe_next(request: HttpRequest, fallback: str) -> str:
    """Where a plain (no JavaScript) form goes back to after its POST."""
    target = request.POST.get("next") or ""
    # A path on this site, never a bare word: redirect() would look that up as a URL's name.
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback
