"""The agents' API tokens, for tenant admins: who has one, when it was last used, when it stops;
a new one is shown once; a revoked or expired one is a 401 at once."""

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from memory_review import textlimits
from memory_review.lifecycle import Actor
from memory_review.tenancy.models import ApiToken
from memory_review.tenancy.tokens import token_create, token_revoke

from ..access import require_admin
from .base import page, tenant_view


class TokenForm(forms.Form):
    name = textlimits.CharField(max_length=80, strip=True, label="Who uses it (e.g. support-bot)")
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=3650, label="Expires after (days)"
    )


def _tokens_page(request: HttpRequest, membership, form: TokenForm, *, status: int = 200, new=None):
    tokens = ApiToken.objects.filter(tenant=membership.tenant).order_by("-created_at")
    return page(request, membership, "review/tokens.html", status=status, tokens=tokens, form=form, new=new)


@require_GET
@tenant_view
def token_list(request: HttpRequest, membership) -> HttpResponse:
    require_admin(membership, "API tokens are managed by tenant admins")
    return _tokens_page(request, membership, TokenForm())


@require_POST
@tenant_view
def token_new(request: HttpRequest, membership) -> HttpResponse:
    require_admin(membership, "API tokens are managed by tenant admins")
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _tokens_page(request, membership, form, status=400)
    _, token = token_create(
        tenant=membership.tenant,
        name=form.cleaned_data["name"],
        expires_in_days=form.cleaned_data["expires_in_days"],
    )
    # Shown on this answer only: it is stored hashed and cannot be read again.
    return _tokens_page(request, membership, TokenForm(), new=token)


@require_POST
@tenant_view
def token_revoke_view(request: HttpRequest, membership, pk: int) -> HttpResponse:
    require_admin(membership, "API tokens are managed by tenant admins")
    token = get_object_or_404(ApiToken.objects.filter(tenant=membership.tenant), pk=pk)
    token_revoke(token=token, by=str(Actor.user(request.user)))
    messages.success(request, f"Token {token.name} ({token.prefix}…) revoked: it is refused from now on.")
    return redirect("token-list", membership.tenant.slug)
