"""API tokens: named, listed with when they were last used, expiring, revoked; a revoked or
expired token is a 401 at once."""

from datetime import timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory_review.tenancy.models import ApiToken, Role
from memory_review.tenancy.tokens import token_authenticate, token_create, token_revoke
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def call_api(client, token):
    return client.get("/api/v1/t/acme/assessments/999", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_revoked_token_is_refused_at_once(client, acme, policy):
    row, token = token_create(tenant=acme, name="support-bot")
    assert call_api(client, token).status_code == 404  # accepted: there is just no such assessment

    token_revoke(token=row, by="user:1")

    assert call_api(client, token).status_code == 401


def test_an_expired_token_is_refused(client, acme, policy):
    _, token = token_create(tenant=acme, name="support-bot", expires_in_days=1)
    with time_machine.travel(timezone.now() + timedelta(days=1, minutes=1)):
        assert call_api(client, token).status_code == 401
    assert call_api(client, token).status_code == 404


def test_an_admin_creates_sees_once_and_revokes_tokens_from_the_page(client, acme, policy):
    admin = make_user("acme-admin", acme, Role.ADMIN)
    client.force_login(admin)

    created = client.post("/t/acme/tokens/new/", {"name": "returns-agent", "expires_in_days": 30})
    token = created.context["new"]
    row = ApiToken.objects.get(name="returns-agent")
    assert token in created.content.decode() and token not in client.get("/t/acme/tokens/").content.decode()
    call_api(client, token)
    page = client.get("/t/acme/tokens/").content.decode()
    assert "just now" in page and ">never<" not in page  # last used a moment ago, as a person says it

    client.post(f"/t/acme/tokens/{row.pk}/revoke/")

    row.refresh_from_db()
    assert row.state == "revoked" and row.revoked_by == f"user:{admin.pk}"
    assert call_api(client, token).status_code == 401


def test_only_admins_manage_tokens(client, acme, lead, auditor):
    row, _ = token_create(tenant=acme, name="bot")
    for user in (lead, auditor):
        client.force_login(user)
        assert client.get("/t/acme/tokens/").status_code == 403
        assert client.post(f"/t/acme/tokens/{row.pk}/revoke/").status_code == 403
    row.refresh_from_db()
    assert row.state == "active"


def test_another_tenants_token_cannot_be_revoked_from_here(client, acme, globex):
    theirs, _ = token_create(tenant=globex, name="their-bot")
    client.force_login(make_user("acme-admin", acme, Role.ADMIN))
    assert client.post(f"/t/acme/tokens/{theirs.pk}/revoke/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.state == "active"


def test_the_commands_create_list_and_revoke(acme, capsys):
    call_command("create_api_token", tenant="acme", name="billing-assistant", expires_days=7)
    token = capsys.readouterr().out.strip()
    prefix = token.split("_")[1]

    call_command("api_tokens", tenant="acme")
    listed = capsys.readouterr().out
    call_command("api_tokens", tenant="acme", revoke=prefix)

    assert f"{prefix}  billing-assistant" in listed and "active" in listed and "last used never" in listed
    assert ApiToken.objects.get(prefix=prefix).state == "revoked"
    with pytest.raises(CommandError, match="no token with prefix 'nope'"):
        call_command("api_tokens", tenant="acme", revoke="nope")
    with pytest.raises(CommandError, match="at least a day"):
        call_command("create_api_token", tenant="acme", name="x", expires_days=0)


def test_make_demos_token_file_is_kept_while_it_works_and_replaced_when_stale(acme, globex, tmp_path):
    """`make demo` on a database made anew must not hand its agent a token that database never had."""
    held = tmp_path / "api-token"
    call_command("create_api_token", tenant="acme", name="demo-agent", file=held)
    first = held.read_text().strip()
    call_command("create_api_token", tenant="acme", name="demo-agent", file=held)
    assert held.read_text().strip() == first  # still works: kept
    assert ApiToken.objects.filter(tenant=acme).count() == 1

    held.write_text("mr_deadbeef_a-token-from-a-database-since-deleted\n")
    call_command("create_api_token", tenant="acme", name="demo-agent", file=held)
    replaced = held.read_text().strip()
    assert replaced != first and token_authenticate(replaced).tenant == acme

    call_command("create_api_token", tenant="globex", name="demo-agent", file=held)  # another tenant's
    assert token_authenticate(held.read_text().strip()).tenant == globex
