"""API tokens: `mr_<prefix>_<secret>`, stored as a SHA-256 hash and found by prefix."""

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from .models import ApiToken, Tenant


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, tenant: Tenant, name: str, expires_in_days: int | None = None) -> tuple[ApiToken, str]:
    """Returns the row and the token itself, which is not stored anywhere."""
    name = (name or "").strip()
    if not name:
        raise ValueError("a token needs a name: who uses it, e.g. support-bot")
    if expires_in_days is not None and expires_in_days < 1:
        raise ValueError("a token lasts at least a day (or leave the expiry out)")
    prefix = secrets.token_hex(4)
    token = f"mr_{prefix}_{secrets.token_urlsafe(32)}"
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    row = ApiToken.objects.create(
        tenant=tenant, name=name[:80], prefix=prefix, token_hash=_hash(token), expires_at=expires_at
    )
    return row, token


def token_revoke(*, token: ApiToken, by: str) -> ApiToken:
    """From now on the token is a 401. Kept, with who revoked it and when."""
    if token.revoked_at is None:
        ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_by=by
        )
        token.refresh_from_db()
    return token


def token_is_live(token: ApiToken) -> bool:
    """Not revoked, not expired, its tenant active: asked again while a long poll waits, so a
    token revoked meanwhile gets nothing more."""
    now = timezone.now()
    return (
        ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True, tenant__is_active=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .exists()
    )


def token_authenticate(token: str) -> ApiToken | None:
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != "mr":
        return None
    row = (
        ApiToken.objects.select_related("tenant")
        .filter(prefix=parts[1], revoked_at__isnull=True, tenant__is_active=True)
        .first()
    )
    if row is None or not hmac.compare_digest(row.token_hash, _hash(token)):
        return None
    now = timezone.now()
    if row.expires_at is not None and row.expires_at <= now:
        return None
    if row.last_used_at is None or now - row.last_used_at > timedelta(minutes=1):
        # At most one write a minute per token: an agent polling an assessment should not
        # turn every read into a write.
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row
