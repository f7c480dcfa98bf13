"""Issue 27, item 1: an erasure, by any path, leaves the tenant verifying. Reasons, notes and
requests that quote the person are blanked in the erasure's transaction, and every sealed row it
touches is sealed from what the database then holds (an instance read before the blanking, such
as the two-person request being confirmed, must not be sealed with the words it no longer has)."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from memory_review.audit import verification
from memory_review.compliance import dual_control, security
from memory_review.memories.models import DualControl, Erasure, Memory, SourceEvent
from memory_review.memories.services import ERASED
from memory_review.tenancy.models import Tenant
from tests.demo_data import seed_demo
from tests.test_erasure import DANA, every_text_column

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    seed_demo()
    return Tenant.objects.get(slug="acme")


def people(username: str):
    return get_user_model().objects.get(username=username)


def her_sentence(tenant) -> str:
    """A sentence of hers long enough to count as quoting her (compliance/erasure.quotes)."""
    event = SourceEvent.objects.for_tenant(tenant).filter(user_id=DANA).order_by("pk").first()
    return event.text.split(". ")[0].strip()


def quoting_reason(tenant) -> str:
    return f"She asked us to delete it; her ticket said: {her_sentence(tenant)}"


def rule_off(tenant) -> None:
    """The audited way: the admin asks, the lead confirms (a rule switched around the application
    is itself named by verify_audit)."""
    asked = security.settings_change(
        tenant=tenant, by=people("admin"), two_person_rule=False, reason="audit over"
    )
    dual_control.confirm(request=asked, by=people("acme-lead"))


def by_the_page_alone(tenant, client):
    rule_off(tenant)
    client.force_login(people("admin"))
    form = {"user_id": DANA, "confirm_user_id": DANA, "reason": quoting_reason(tenant)}
    assert client.post(f"/t/{tenant.slug}/erasures/request/", form).status_code == 302


def by_the_page_with_a_second_person(tenant, client):
    client.force_login(people("admin"))
    form = {"user_id": DANA, "confirm_user_id": DANA, "reason": quoting_reason(tenant)}
    assert client.post(f"/t/{tenant.slug}/erasures/request/", form).status_code == 302
    asked = DualControl.objects.get(kind="erase", outcome__isnull=True)
    client.force_login(people("acme-lead"))
    assert client.post(f"/t/{tenant.slug}/requests/{asked.pk}/confirm/").status_code == 302


def by_the_command_line_alone(tenant, client):
    rule_off(tenant)
    call_command("erase_subject", tenant=tenant.slug, user_id=DANA, reason=quoting_reason(tenant))


def by_the_command_line_then_confirmed_in_the_app(tenant, client):
    call_command(
        "erase_subject",
        tenant=tenant.slug,
        user_id=DANA,
        reason=quoting_reason(tenant),
        requested_by="acme-lead",
    )
    asked = DualControl.objects.get(kind="erase", outcome__isnull=True)
    client.force_login(people("admin"))
    assert client.post(f"/t/{tenant.slug}/requests/{asked.pk}/confirm/").status_code == 302


def by_the_service_confirming(tenant, client):
    asked = dual_control.request_erasure(
        tenant=tenant, user_id=DANA, reason=quoting_reason(tenant), by=people("acme-lead")
    )
    dual_control.confirm(request=asked, by=people("admin"))


PATHS = [
    by_the_page_alone,
    by_the_page_with_a_second_person,
    by_the_command_line_alone,
    by_the_command_line_then_confirmed_in_the_app,
    by_the_service_confirming,
]


@pytest.mark.parametrize("erase", PATHS, ids=lambda path: path.__name__)
def test_an_erasure_quoting_her_leaves_the_tenant_verifying(demo, client, erase):
    sentence = her_sentence(demo)
    assert len(sentence) >= 12
    # A pending forgetting of one of her memories, whose reason quotes her too.
    hers = Memory.objects.for_tenant(demo).filter(user_id=DANA, status="active").first()
    dual_control.request_forget(
        memory=hers,
        reason=f"customer wrote: {sentence}",
        seen_version=hers.row_version,
        by=people("acme-lead"),
    )
    assert verification.problem_in(demo) is None

    erase(demo, client)

    demo.refresh_from_db()  # the rule may have been switched off
    erasure = Erasure.objects.get(tenant=demo)
    assert erasure.completed_at is not None
    assert verification.problem_in(demo) is None
    # And again after the checkpoint job's own run, which records (and seals) its verification.
    verification.verify_and_record(demo, by="system:test")
    assert verification.problem_in(demo) is None
    assert erasure.reason == ERASED
    left = [
        f"{model.__name__}.{column}"
        for model, column in every_text_column()
        if model._base_manager.filter(**{f"{column}__contains": sentence}).exists()
    ]
    assert left == []


def test_a_customer_with_four_hundred_events_can_be_erased_and_the_tenant_verifies(acme):
    """Each event gives two sentences to look for everywhere: asked as one OR, SQLite refused the
    query (its expression tree is at most 1,000 deep), so this customer could never be erased."""
    from memory_review.compliance.erasure import erase_subject
    from memory_review.memories.services import event_record

    for n in range(400):
        event_record(
            tenant=acme, source="chat", user_id="cust-9",
            text=f"My order number {n} is late again. Please call me back about order {n}.",
        )  # fmt: skip
    other = event_record(
        tenant=acme, source="chat", user_id="cust-1", text="My order number 7 is late again."
    )

    erasure = erase_subject(tenant=acme, user_id="cust-9", reason="asked", requested_by="user:1")

    assert erasure.events_erased == 400
    other.refresh_from_db()
    assert other.text == ERASED  # it quotes her, whole
    assert verification.problem_in(acme) is None


def test_her_email_address_and_phone_number_are_quotes_of_her_on_their_own():
    """One word can be enough: no other text shares an e-mail address or a long number by chance."""
    from memory_review.compliance.erasure import quotes

    found = quotes(["Reach me at dana.w@example.co.uk or +44 20 7946 0958, not before 2026-12-04 10:00."])

    assert "dana.w@example.co.uk" in found and "+44 20 7946 0958" in found
    assert not any(q.startswith("2026-12-04") for q in found)
