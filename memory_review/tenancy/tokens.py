"""API tokens: `mr_<prefix>_<secret>`, stored as a SHA-256 hash and found by prefix."""

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.utils import timezone

from .models import ApiToken, Tenant


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, tenant: Tenant, name: str) -> tuple[ApiToken, str]:
    """Returns the row and the token itself, which is not stored anywhere."""
    prefix = secrets.token_hex(4)
    token = f"mr_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiToken.objects.create(tenant=tenant, name=name, prefix=prefix, token_hash=_hash(token))
    return row, token


def token_authenticate(token: str) -> ApiToken | None:
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != "mr":
        return None
    row = ApiToken.objects.select_related("tenant").filter(prefix=parts[1], revoked_at__isnull=True).first()
    if row is None or not hmac.compare_digest(row.token_hash, _hash(token)):
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > timedelta(minutes=1):
        # At most one write a minute per token: an agent polling an assessment should not
        # turn every read into a write.
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row
