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
from memory_review.memories.models import DualControl
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


def test_a_borrowed_password_acts_for_no_one_and_its_sign_in_is_named_after_it_is_put_back(strict, client):
    tenant, lead, admin = strict["tenant"], strict["lead"], strict["admin"]
    saved = dict(User.objects.filter(pk__in=(lead.pk, admin.pk)).values_list("pk", "password"))
    known = make_password("attacker's own")
    write_around("UPDATE {users} SET password = %s WHERE id IN (%s, %s)", [known, lead.pk, admin.pk])

    sign_in(client, "acme-admin", "attacker's own")  # a sign-in cannot tell; it is sealed as it was
    form = {"user_id": "cust-5", "confirm_user_id": "cust-5", "reason": "asked"}
    refused = client.post("/t/acme/erasures/request/", form)
    with pytest.raises(dual_control.DualControlError, match="changed around the application"):
        dual_control.request_erasure(tenant=tenant, user_id="cust-5", reason="asked", by=lead)
    for pk, password in saved.items():
        write_around("UPDATE {users} SET password = %s WHERE id = %s", [password, pk])

    assert refused.status_code == 403 and b"changed around the application" in refused.content
    assert not DualControl.objects.filter(kind="erase").exists()
    said = problem(tenant)
    assert "user acme-admin" in said and "signed in" in said and "around the application" in said


def test_a_role_borrowed_around_the_application_acts_for_no_one(strict, client):
    reviewer = make_user("acme-reviewer", strict["tenant"], Role.REVIEWER)
    write_around("UPDATE tenancy_membership SET role = 'admin' WHERE user_id = %s", [reviewer.pk])
    client.force_login(reviewer)
    form = {"user_id": "cust-5", "confirm_user_id": "cust-5", "reason": "asked"}

    assert client.post("/t/acme/erasures/request/", form).status_code == 403
    assert not DualControl.objects.filter(kind="erase").exists()


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


def test_a_superuser_deleted_around_the_application_is_named(strict):
    root = User.objects.create_superuser("root", password="x")  # counts in every tenant, a member of none
    write_around("DELETE FROM {users} WHERE id = %s", [root.pk])
    assert f"user {root.pk} was deleted around the application" in problem(strict["tenant"])


def test_a_superuser_demoted_around_the_application_is_named_and_through_it_is_not(strict):
    root = User.objects.create_superuser("root", password="x")
    write_around("UPDATE {users} SET is_superuser = %s, is_staff = %s WHERE id = %s", [False, False, root.pk])
    assert "user root" in problem(strict["tenant"]) and "no longer counts in this tenant" in problem(
        strict["tenant"]
    )
    write_around("UPDATE {users} SET is_superuser = %s, is_staff = %s WHERE id = %s", [True, True, root.pk])

    root.refresh_from_db()
    root.is_superuser = root.is_staff = False
    root.save()
    assert verification.problem_in(strict["tenant"]) is None


def test_a_member_removed_through_the_application_leaves_it_intact_and_around_it_is_named(strict):
    reviewer = make_user("acme-reviewer", strict["tenant"], Role.REVIEWER)
    reviewer.memberships.all().delete()  # through the application: sealed as left
    assert verification.problem_in(strict["tenant"]) is None
    labeler = make_user("acme-labeler", strict["tenant"], Role.LABELER)
    write_around("DELETE FROM tenancy_membership WHERE user_id = %s", [labeler.pk])
    assert "was deleted around the application" in problem(strict["tenant"])  # the membership's seal


def test_a_planted_password_is_not_sealed_by_the_hasher_upgrading_it_at_sign_in(strict, client, settings):
    """Production's hashers: a weak hash planted around the application is upgraded at sign-in; the
    upgrade's write must not vouch for it."""
    from django.conf import global_settings
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    weak = PBKDF2PasswordHasher().encode("attacker's own", "saltsaltsalt", iterations=1000)
    write_around("UPDATE {users} SET password = %s WHERE id = %s", [weak, strict["admin"].pk])

    sign_in(client, "acme-admin", "attacker's own")

    assert User.objects.get(pk=strict["admin"].pk).password != weak  # upgraded
    assert "user acme-admin" in problem(strict["tenant"])


def test_a_legitimate_change_after_tampering_does_not_vouch_for_it(strict):
    write_around("UPDATE {users} SET is_superuser = %s WHERE id = %s", [True, strict["lead"].pk])
    strict["lead"].groups.add(Group.objects.create(name="helpdesk"))
    Group.objects.get(name="helpdesk").delete()
    assert "user acme-lead" in problem(strict["tenant"])


def test_deleting_a_group_or_a_permission_through_the_application_leaves_it_intact(strict):
    group = Group.objects.create(name="helpdesk")
    permission = Permission.objects.get(codename="change_logentry")
    group.permissions.add(permission)
    strict["lead"].groups.add(group)
    strict["admin"].user_permissions.add(permission)
    group.delete()
    permission.delete()
    assert verification.problem_in(strict["tenant"]) is None


def test_an_api_token_hash_planted_around_the_application_is_refused(strict, client):
    import hashlib

    from memory_review.tenancy.tokens import token_create

    row, real = token_create(tenant=strict["tenant"], name="support-bot")
    planted = f"mr_{row.prefix}_attackers-own-secret"
    write_around(
        "UPDATE tenancy_apitoken SET token_hash = %s WHERE id = %s",
        [hashlib.sha256(planted.encode()).hexdigest(), row.pk],
    )

    answer = client.get("/api/v1/t/acme/memories", HTTP_AUTHORIZATION=f"Bearer {planted}")

    assert answer.status_code == 401
    write_around("UPDATE tenancy_apitoken SET token_hash = %s WHERE id = %s", [row.token_hash, row.pk])
    assert client.get("/api/v1/t/acme/memories", HTTP_AUTHORIZATION=f"Bearer {real}").status_code == 200
