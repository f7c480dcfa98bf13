"""What every tenant page shares: the membership resolved first (another tenant is a 404), and
the tenant and role in every template (the header shows both)."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme

from memory_review.tenancy.access import get_membership


def tenant_view(view):
    """Log in, then resolve the membership for the URL's tenant and pass it on."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args, **kwargs):
        return view(request, get_membership(request.user, slug), *args, **kwargs)

    return wrapper


def page(request: HttpRequest, membership, template: str, *, status: int = 200, **context) -> HttpResponse:
    return render(
        request,
        template,
        {"membership": membership, "tenant": membership.tenant, **context},
        status=status,
    )


def partial_or_page(request: HttpRequest, template: str, partial: str) -> str:
    """htmx swaps a named region; a plain request gets the whole page."""
    return f"{template}#{partial}" if request.htmx and not request.htmx.boosted else template


def safe_next(request: HttpRequest, fallback: str) -> str:
    """Where a plain (no JavaScript) form goes back to after its POST."""
    target = request.POST.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback
