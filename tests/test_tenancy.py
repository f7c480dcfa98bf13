"""Tenants are the access boundary: scoped queries, and 404 (never 403) for outsiders."""

import pytest

from memory_review.assessments.models import Assessment, PolicyVersion, Verdict
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, MemoryLink, SourceEvent
from memory_review.memories.services import link_create
from tests.factories import make_memory, make_user


@pytest.fixture
def both_tenants_have_data(acme, globex):
    for tenant in (acme, globex):
        first, second = make_memory(tenant), make_memory(tenant)
        link_create(src=second, dst=first, kind="supports", origin="explicit")
        policy = PolicyVersion.objects.create(
            tenant=tenant, number=1, mode="active", thresholds={}, created_by="t"
        )
        assessment = Assessment.objects.create(
            tenant=tenant,
            purpose="invalidation",
            event=first.source_event,
            policy=policy,
            question_set_version="q1",
        )
        Verdict.objects.create(
            tenant=tenant,
            assessment=assessment,
            memory=first,
            event=first.source_event,
            row_version=first.row_version,
            disposition="uncertain",
        )
        transition(
            obj=first,
            action="flag",
            actor=Actor.policy("v1"),
            reason="uncertain",
            seen_version=first.row_version,
        )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model", [SourceEvent, Memory, MemoryLink, PolicyVersion, Assessment, Verdict, Transition]
)
def test_tenant_scoped_queries_never_return_another_tenants_rows(acme, globex, both_tenants_have_data, model):
    mine = model.objects.for_tenant(acme)
    assert mine.exists()
    assert set(mine.values_list("tenant_id", flat=True)) == {acme.pk}
    assert (
        not model.objects.for_tenant(acme)
        .filter(pk__in=model.objects.for_tenant(globex).values("pk"))
        .exists()
    )
    # The tenant as a range too (for pages read newest first): the same rows, no other tenant's.
    ranged = model.objects.tenant_range(acme)
    assert set(ranged.values_list("pk", flat=True)) == set(mine.values_list("pk", flat=True))


@pytest.mark.django_db
def test_a_tenants_newest_row_is_its_own_when_another_tenants_rows_are_newer(
    acme, globex, both_tenants_have_data
):
    from memory_review.calibration.figures import newest_rows

    for model in (Verdict, Transition, Assessment):
        column = "seq" if model is Transition else "id"
        newest = newest_rows(model, acme.pk, column).get()[column]
        ids = model.objects.for_tenant(acme).values_list(column, flat=True)
        assert newest == max(ids)
        assert (
            model.objects.for_tenant(globex)
            .filter(pk__gt=model.objects.for_tenant(acme).latest("pk").pk)
            .exists()
        )


def test_every_model_that_carries_a_tenant_is_queried_through_the_scoped_manager():
    from django.apps import apps

    carrying = [
        m
        for m in apps.get_models()
        if any(f.name == "tenant" for f in m._meta.fields) and m._meta.app_label != "tenancy"
    ]
    assert len(carrying) >= 11
    assert [m._meta.label for m in carrying if not hasattr(m.objects, "for_tenant")] == []


@pytest.mark.django_db
def test_scope_inherits_upward(acme):
    tenant_wide = make_memory(acme)
    for_user = make_memory(acme, user_id="cust-1")
    for_thread = make_memory(acme, user_id="cust-1", thread_id="t-9")
    other_user = make_memory(acme, user_id="cust-2")

    seen = set(Memory.objects.for_tenant(acme).for_scope(user_id="cust-1", agent_id=None, thread_id="t-9"))

    assert seen == {tenant_wide, for_user, for_thread}
    assert other_user not in seen


@pytest.mark.django_db
def test_the_tenant_home_counts_memories_per_status(client, acme, lead, both_tenants_have_data):
    client.force_login(lead)
    response = client.get("/t/acme/")
    assert response.status_code == 200
    counts = {status: n for status, _, n in response.context["counts"]}
    assert counts["active"] == 1
    assert counts["needs_review"] == 1
    assert counts["contradicted"] == 0


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/t/globex/", "/t/globex/review/", "/t/nowhere/"])
def test_a_non_member_gets_a_404(client, lead, globex, path):
    client.force_login(lead)
    assert client.get(path).status_code == 404


@pytest.mark.django_db
def test_a_user_of_no_tenant_gets_a_404_and_an_anonymous_one_is_sent_to_log_in(client, acme):
    response = client.get("/t/acme/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    client.force_login(make_user("drifter"))
    assert client.get("/t/acme/").status_code == 404


@pytest.mark.django_db
def test_logging_in_lands_a_one_tenant_user_on_their_tenant(client, lead):
    response = client.post("/accounts/login/", {"username": "acme-lead", "password": "demo"}, follow=True)
    assert response.redirect_chain[-1][0] == "/t/acme/"
    assert "Acme Support" in response.content.decode()


@pytest.mark.django_db
def test_every_page_says_when_votes_come_from_the_offline_stand_in(client, acme, lead, settings):
    client.force_login(lead)
    settings.TYPESAFE_API_KEY = ""
    assert "offline Jev stand-in" in client.get("/t/acme/review/").content.decode()
    settings.TYPESAFE_API_KEY = "a-real-key"
    assert "offline Jev stand-in" not in client.get("/t/acme/review/").content.decode()
