"""Issue 27, item 2: identities in the seal. Someone who can write the database but holds no key
resets leads' password hashes, signs in as each to ask for and confirm an erasure, and puts the
hashes back; makes a user staff or superuser, swaps usernames, deactivates a lead, adds a group
or a permission, inserts or deletes a user. verify_audit names each. Changes made through
Django's own paths (a password change, the admin, createsuperuser, groups) leave it intact.
Run on SQLite and PostgreSQL (tests/factories.around_the_application)."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group, Permission
from django.db import connection

from memory_review.audit import verification
from memory_review.compliance import dual_control
from memory_review.tenancy.models import Role, Tenant
from tests.factories import around_the_application, make_memory, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("orphans_allowed")]
User = get_user_model()


@pytest.fixture
def strict(acme, lead):
    """acme keeps the two-person rule, with a lead and an admin who can confirm for each other."""
    admin = make_user("acme-admin", acme, Role.ADMIN)
    Tenant.objects.filter(pk=acme.pk).update(two_person_rule=True)  # sealed again below
    acme.refresh_from_db()
    acme.save()
    make_memory(acme, user_id="cust-5")
    assert verification.problem_in(acme) is None
    return {"tenant": acme, "lead": lead, "admin": admin}


def write_around(sql: str, params=()) -> None:
    with around_the_application() as cursor:
        cursor.execute(sql.replace("{users}", connection.ops.quote_name(User._meta.db_table)), params)


def sign_in(client, username: str, password: str) -> None:
    """Through the sign-in page, as the attacker would."""
    answer = client.post("/accounts/login/", {"username": username, "password": password})
    assert answer.status_code == 302, "the sign-in was refused"


def problem(tenant) -> str:
    found = verification.problem_in(tenant)
    assert found is not None, "verify_audit said intact"
    return str(found)


def test_the_application_s_own_writes_of_people_leave_the_tenant_intact(strict, client):
    tenant, lead = strict["tenant"], strict["lead"]
    lead.set_password("a new passphrase")
    lead.save()
    client.force_login(lead)  # a sealed sign-in, with the identity sealed a moment ago
    group = Group.objects.create(name="helpdesk")
    group.permissions.add(Permission.objects.get(codename="view_logentry"))
    lead.groups.add(group)
    lead.user_permissions.add(Permission.objects.get(codename="change_logentry"))
    group.user_set.clear()
    User.objects.create_superuser("root", password="x")  # counts in every tenant
    make_user("newcomer", tenant, Role.REVIEWER)
    Tenant.objects.create(slug="initech", name="Initech")  # the superuser is sealed there too
    gone = make_user("leaver", tenant, Role.LABELER)
    gone.delete()
    assert verification.problem_in(tenant) is None
    assert verification.problem_in(Tenant.objects.get(slug="initech")) is None


def test_a_borrowed_password_used_for_a_two_person_erasure_is_named_after_it_is_put_back(strict, client):
    tenant, lead, admin = strict["tenant"], strict["lead"], strict["admin"]
    saved = dict(User.objects.filter(pk__in=(lead.pk, admin.pk)).values_list("pk", "password"))
    known = make_password("attacker's own")
    write_around("UPDATE {users} SET password = %s WHERE id IN (%s, %s)", [known, lead.pk, admin.pk])

    sign_in(client, "acme-lead", "attacker's own")
    asked = dual_control.request_erasure(tenant=tenant, user_id="cust-5", reason="asked", by=lead)
    client.logout()
    sign_in(client, "acme-admin", "attacker's own")
    assert client.post(f"/t/acme/requests/{asked.pk}/confirm/").status_code == 302
    for pk, password in saved.items():
        write_around("UPDATE {users} SET password = %s WHERE id = %s", [password, pk])

    said = problem(tenant)
    assert "user acme-lead" in said and "signed in" in said and "around the application" in said
    assert f"two-person requests {asked.pk}" in said


@pytest.mark.parametrize(
    "column, value",
    [("is_superuser", True), ("is_staff", True), ("is_active", False), ("first_name", "Maria")],
)
def test_a_flag_or_name_changed_around_the_application_is_named(strict, column, value):
    write_around(f"UPDATE {{users}} SET {column} = %s WHERE id = %s", [value, strict["lead"].pk])
    said = problem(strict["tenant"])
    assert "user acme-lead" in said and "changed around the application" in said


def test_two_usernames_swapped_around_the_application_are_named(strict):
    lead, admin = strict["lead"], strict["admin"]
    write_around("UPDATE {users} SET username = %s WHERE id = %s", ["swap", lead.pk])
    write_around("UPDATE {users} SET username = %s WHERE id = %s", ["acme-lead", admin.pk])
    write_around("UPDATE {users} SET username = %s WHERE id = %s", ["acme-admin", lead.pk])
    assert "changed around the application" in problem(strict["tenant"])


def test_a_group_or_permission_given_around_the_application_is_named(strict):
    group = Group.objects.create(name="helpdesk")
    through = User.groups.through._meta.db_table
    write_around(f"INSERT INTO {through} (user_id, group_id) VALUES (%s, %s)", [strict["lead"].pk, group.pk])
    assert "groups or permissions" in problem(strict["tenant"])


def test_a_superuser_inserted_around_the_application_is_named(strict):
    write_around(
        "INSERT INTO {users} (username, password, first_name, last_name, email, is_active, is_staff, "
        "is_superuser, date_joined) VALUES ('mallory', %s, '', '', '', %s, %s, %s, CURRENT_TIMESTAMP)",
        [make_password("x"), True, True, True],
    )
    assert "user mallory" in problem(strict["tenant"]) and "no seal" in problem(strict["tenant"])


def test_a_user_deleted_around_the_application_is_named(strict):
    reviewer = make_user("acme-reviewer", strict["tenant"], Role.REVIEWER)
    reviewer.memberships.all().delete()  # through the application: sealed; the user still counted once
    write_around("DELETE FROM {users} WHERE id = %s", [reviewer.pk])
    assert f"user {reviewer.pk} was deleted around the application" in problem(strict["tenant"])
