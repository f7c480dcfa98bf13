"""No one person can disarm the two-person rule (issue 14, item 5): the tenant's security settings
and members change only through compliance/security.py, which waits for a second lead or admin
where the rule holds; the Django admin shows them read-only and changes no one else's password;
the command line only asks; and verify_audit names an erasure or a forgetting made alone while
the rule held, however the rule was switched off around it."""

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from memory_review.audit import verification
from memory_review.compliance import dual_control, security
from memory_review.compliance.erasure import erase_subject
from memory_review.lifecycle import Actor
from memory_review.memories.models import DualControl, Erasure
from memory_review.memories.services import event_record, memory_forget
from memory_review.tenancy.models import Membership, Role, Tenant
from tests.factories import make_memory, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict(acme, lead):
    Tenant.objects.filter(pk=acme.pk).update(two_person_rule=True)
    acme.refresh_from_db()
    return acme


@pytest.fixture
def admin(acme):
    return make_user("acme-admin", acme, Role.ADMIN)


@pytest.fixture
def superuser(acme):
    user = make_user("root", acme, Role.ADMIN)
    user.is_superuser = user.is_staff = True
    user.save()
    return user


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def her_data(tenant):
    event_record(tenant=tenant, source="chat", text="Call me on 0161 496 0000.", user_id="cust-5")
    make_memory(tenant, user_id="cust-5", content="cust-5's number is 0161 496 0000.")


# -- the Django admin ------------------------------------------------------------------------------


def test_the_admin_site_shows_tenants_and_memberships_but_changes_neither(strict, superuser, lead):
    client = signed_in(superuser)
    membership = Membership.objects.get(user=lead)

    assert client.get(f"/admin/tenancy/tenant/{strict.pk}/change/").status_code == 200  # read-only view
    switched = client.post(
        f"/admin/tenancy/tenant/{strict.pk}/change/",
        {"slug": "acme", "name": "Acme Support", "two_person_rule": "", "is_active": "on"},
    )
    promoted = client.post(f"/admin/tenancy/membership/{membership.pk}/change/", {"role": "admin"})
    added = client.post("/admin/tenancy/membership/add/", {"tenant": strict.pk, "user": superuser.pk})
    removed = client.post(f"/admin/tenancy/membership/{membership.pk}/delete/", {"post": "yes"})

    assert [r.status_code for r in (switched, promoted, added, removed)] == [403, 403, 403, 403]
    strict.refresh_from_db()
    assert strict.two_person_rule and Membership.objects.get(pk=membership.pk).role == Role.LEAD


def test_a_superuser_cannot_set_another_leads_password_to_sign_in_as_them(strict, superuser, lead):
    client = signed_in(superuser)

    other = client.post(
        f"/admin/auth/user/{lead.pk}/password/", {"password1": "s3cret-Horse!", "password2": "s3cret-Horse!"}
    )
    own = client.get(f"/admin/auth/user/{superuser.pk}/password/")
    made_superuser = client.post(
        f"/admin/auth/user/{lead.pk}/change/",
        {"username": lead.username, "is_superuser": "on", "is_active": "on", "is_staff": "on"},
    )

    lead.refresh_from_db()
    assert other.status_code == 403 and own.status_code == 200
    assert lead.check_password("demo") and not lead.is_superuser
    assert made_superuser.status_code in (200, 302)


def test_switching_the_rule_off_in_the_database_erasing_alone_and_back_on_is_named(strict, admin):
    her_data(strict)
    Tenant.objects.filter(pk=strict.pk).update(two_person_rule=False)  # as a shell or the ORM could
    erasure = erase_subject(tenant=strict, user_id="cust-5", reason="asked", requested_by=f"user:{admin.pk}")
    Tenant.objects.filter(pk=strict.pk).update(two_person_rule=True)

    problem = verification.problem_in(strict)

    assert f"erasure {erasure.pk} of" in str(problem)
    assert "made while the two-person rule held, but no second lead or admin confirmed it" in str(problem)


def test_a_memory_forgotten_alone_while_the_rule_held_is_named(strict, lead):
    memory = make_memory(strict)
    memory_forget(memory=memory, actor=Actor.user(lead), reason="asked", seen_version=memory.row_version)

    assert f"memory {memory.pk} was forgotten (transition #1" in str(verification.problem_in(strict))


def test_a_rule_switched_around_its_recorded_changes_is_named(acme, admin, lead):
    security.settings_change(tenant=acme, by=admin, two_person_rule=True, reason="SOC 2")  # at once: off
    Tenant.objects.filter(pk=acme.pk).update(two_person_rule=False)

    problem = verification.problem_in(acme)

    assert "the two-person rule is off, but the last change recorded switched it on" in str(problem)


# -- the audited path -----------------------------------------------------------------------------


def test_switching_the_rule_off_waits_for_a_second_person_and_then_erasing_alone_verifies(
    strict, admin, lead
):
    asked = security.settings_change(tenant=strict, by=admin, two_person_rule=False, reason="audit over")
    strict.refresh_from_db()
    assert strict.two_person_rule and asked.outcome is None

    with pytest.raises(dual_control.DualControlError, match="someone other than the person who asked"):
        dual_control.confirm(request=asked, by=admin)
    dual_control.confirm(request=asked, by=lead)

    strict.refresh_from_db()
    asked.refresh_from_db()
    assert not strict.two_person_rule and strict.two_person_since == asked.decided_at
    assert (asked.outcome, asked.decided_by) == ("confirmed", lead)
    her_data(strict)
    erase_subject(tenant=strict, user_id="cust-5", reason="asked", requested_by=f"user:{admin.pk}")
    assert verification.problem_in(strict) is None


def test_without_the_rule_an_admins_change_is_made_at_once_and_kept(acme, admin):
    change = security.settings_change(tenant=acme, by=admin, two_person_rule=True, reason="SOC 2")

    acme.refresh_from_db()
    assert acme.two_person_rule
    assert (change.outcome, change.decided_by, change.requested_by) == ("applied", None, admin)
    assert verification.problem_in(acme) is None


def test_adding_a_lead_under_the_rule_needs_a_second_person_who_is_not_the_new_lead(strict, admin, lead):
    newcomer = make_user("sam")

    asked = security.membership_change(
        tenant=strict, by=admin, user=newcomer, role=Role.LEAD, reason="joined"
    )
    assert not Membership.objects.filter(user=newcomer).exists()
    dual_control.confirm(request=asked, by=lead)

    assert Membership.objects.get(user=newcomer).role == Role.LEAD
    demote = security.membership_change(
        tenant=strict, by=admin, user=lead, role=Role.REVIEWER, reason="moved"
    )
    with pytest.raises(security.SecurityChangeRefused, match="your own membership needs someone else"):
        dual_control.confirm(request=demote, by=lead)
    dual_control.confirm(request=demote, by=newcomer)
    assert Membership.objects.get(user=lead).role == Role.REVIEWER
    assert verification.problem_in(strict) is None


def test_only_a_tenant_admin_asks_and_only_a_lead_or_admin_confirms(strict, admin, lead, reviewer):
    with pytest.raises(security.SecurityChangeRefused, match="only a tenant admin"):
        security.settings_change(tenant=strict, by=lead, two_person_rule=False, reason="x")
    asked = security.settings_change(tenant=strict, by=admin, two_person_rule=False, reason="x")

    with pytest.raises(dual_control.DualControlError, match="only a lead or an admin of this tenant"):
        dual_control.confirm(request=asked, by=reviewer)
    with pytest.raises(security.SecurityChangeRefused, match="say why"):
        security.settings_change(tenant=strict, by=admin, two_person_rule=False, reason=" ")


def test_the_members_page_asks_and_a_lead_confirms_there(strict, admin, lead):
    make_user("sam")
    client = signed_in(admin)

    page = client.get("/t/acme/members/").content.decode()
    client.post("/t/acme/members/change/", {"username": "sam", "role": "lead", "reason": "joined support"})
    client.post("/t/acme/members/rule/", {"two_person_rule": "off", "reason": "audit over"})
    unknown = client.post("/t/acme/members/change/", {"username": "nobody", "role": "lead", "reason": "x"})

    assert "keeps the <strong>two-person rule</strong>" in page and "Ask to switch it off" in page
    assert unknown.status_code == 400 and "no one has this username" in unknown.content.decode()
    waiting = signed_in(lead).get("/t/acme/members/").content.decode()
    assert "Sam" not in waiting.split("Members</h2>")[1].split("</table>")[0]  # not a member yet
    assert "sam: add as lead" in waiting and "switch the two-person rule off" in waiting
    for request in DualControl.objects.filter(outcome__isnull=True).order_by("pk"):
        signed_in(lead).post(f"/t/acme/requests/{request.pk}/confirm/", {"next": "/t/acme/members/"})
    strict.refresh_from_db()
    assert not strict.two_person_rule and Membership.objects.filter(user__username="sam").exists()
    assert (
        signed_in(lead).post("/t/acme/members/rule/", {"two_person_rule": "on", "reason": "x"}).status_code
        == 403
    )


def test_a_lead_sees_what_waits_for_them_on_the_tenant_home(strict, admin, lead):
    security.settings_change(tenant=strict, by=admin, two_person_rule=False, reason="audit over")

    page = signed_in(lead).get("/t/acme/").content.decode()

    assert "Waiting for a second person" in page and "Change the tenant&#x27;s security settings" in page


# -- the command line -----------------------------------------------------------------------------


def test_the_command_line_asks_and_the_confirmer_is_whoever_confirms_in_the_app(strict, lead, capsys):
    her_data(strict)
    call_command("erase_subject", tenant="acme", user_id="cust-5", reason="her request")
    request = DualControl.objects.get()
    assert not Erasure.objects.exists() and request.requested_by is None

    signed_in(lead).post(f"/t/acme/requests/{request.pk}/confirm/")

    erasure = Erasure.objects.get()
    assert (erasure.requested_by, erasure.confirmed_by) == ("system:erase_subject", f"user:{lead.pk}")
    assert verification.problem_in(strict) is None


def test_tenant_member_asks_under_the_rule_and_sets_up_a_new_tenants_first_admin(strict, capsys):
    make_user("sam")
    call_command("tenant_member", tenant="acme", user="sam", role="admin", reason="new admin")
    assert not Membership.objects.filter(user__username="sam").exists()
    assert "asked (request" in capsys.readouterr().out

    fresh = Tenant.objects.create(slug="initech", name="Initech", two_person_rule=True)
    call_command("tenant_member", tenant="initech", user="sam", role="admin", reason="first admin")

    assert Membership.objects.get(tenant=fresh, user__username="sam").role == Role.ADMIN
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("tenant_member", tenant="initech", user="nobody", role="admin", reason="x")
