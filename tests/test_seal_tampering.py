"""The tamper battery for what decisions rest on (issue 14): for every kind of sealed row, a
database administrator without the key edits one, deletes one and inserts one around the
application, and verify_audit names each. Run on SQLite and on PostgreSQL (as the tables' owner,
the app's triggers and foreign keys off where a case needs it: tests/factories.py)."""

from dataclasses import dataclass, field

import pytest
from django.utils import timezone

from memory_review.agents import receipts, webhooks
from memory_review.assessments.models import PromotionCandidate
from memory_review.audit import verification
from memory_review.audit.models import Seal
from memory_review.calibration import adoption, labeling
from memory_review.calibration.models import ReplaySet
from memory_review.compliance.dual_control import request_forget
from memory_review.compliance.erasure import erase_subject
from memory_review.integrity import seals
from memory_review.memories import holds
from memory_review.memories.models import MemoryChange, MemoryLink
from memory_review.memories.services import link_create
from memory_review.quality import results as audit_results
from memory_review.quality import sampling, schedule
from memory_review.quality.models import GateChange
from memory_review.tenancy.models import Membership, Role, Tenant
from memory_review.tenancy.tokens import token_create
from tests.factories import around_the_application, judged, make_memory, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("orphans_allowed")]


@dataclass(frozen=True)
class Case:
    """How to tamper with one kind: which column to edit (to what), and what to change in a copy
    inserted around the application so the table's own constraints take it."""

    edit: tuple[str, object]
    copy: dict = field(default_factory=dict)


CASES = {
    "tenant": Case(edit=("two_person_rule", True), copy={"slug": "initech", "name": "Initech"}),
    "membership": Case(edit=("role", "admin")),  # the copy goes to another user: see `world`
    "api_token": Case(edit=("name", "admin-bot"), copy={"prefix": "deadbeef"}),
    "event": Case(edit=("text", "We never said that.")),
    "memory": Case(edit=("content", "The customer is on the free plan."), copy={"subject": "inserted"}),
    "link": Case(edit=("kind", "contradicts"), copy={"kind": "refines"}),
    "erasure": Case(edit=("confirmed_by", "user:999")),
    "dual_control": Case(edit=("outcome", "confirmed")),
    "policy": Case(edit=("thresholds", {"still_true_high": 0.99}), copy={"number": 9, "mode": "retired"}),
    "assessment": Case(edit=("model_name", "jev-9"), copy={"purpose": "promotion"}),
    "verdict": Case(edit=("still_true", 0.05), copy={"event_id": None}),  # another event: see `world`
    "candidate": Case(edit=("policy_decision", "promote"), copy={"memory_id": None}),
    "label": Case(edit=("outcome", "confirmed")),
    "proposal": Case(edit=("outcome", "adopted"), copy={"policy_id": None}),
    "replay_set": Case(edit=("name", "renamed")),
    "verification": Case(edit=("intact", False)),
    "receipt": Case(edit=("response_id", "never-happened")),
    "webhook_endpoint": Case(edit=("url", "https://collector.example/all-of-it"), copy={"secret": "whsec_x"}),
    "change": Case(edit=("kind", "forgotten"), copy={"seq": 10**6}),
    "delivery": Case(
        edit=("msg_id", "msg_elsewhere"), copy={"msg_id": "msg_forged"}
    ),  # another change: `world`
    "audit_sample": Case(edit=("seed", "0" * 64)),
    "audit_item": Case(edit=("rank", "0" * 15)),
    "audit_label": Case(edit=("outcome", "false")),
    "audit_plan": Case(edit=("every_days", 0)),
    "gate_change": Case(edit=("is_open", True), copy={"channel": "email"}),
    "trust_rules": Case(edit=("hold_classes", "")),
    "notice": Case(edit=("data", {"rate": 0.01}), copy={"key": "unreviewed:forged"}),
}


def test_the_battery_covers_every_sealed_kind():
    """A model that starts being sealed must get its three cases here."""
    assert sorted(CASES) == sorted(model.seal_kind for model in seals.sealed_models())


@pytest.fixture
def world(acme, lead, policy, settings):
    """One row, at least, of every sealed kind in acme, each written by the application."""
    admin = make_user("acme-admin", acme, Role.ADMIN)
    labeler = make_user("acme-labeler", acme, Role.LABELER)
    token_create(tenant=acme, name="support-bot")
    first, second = make_memory(acme), make_memory(acme, user_id="u-dana")
    link_create(src=second, dst=first, kind=MemoryLink.Kind.SUPPORTS, origin=MemoryLink.Origin.REVIEWER)
    verdict = judged(first, policy, still_true=0.55)
    labeling.record(
        acme, labeler, labeling.ItemRef("verdict", verdict.pk), outcome="uncertain", note="close call"
    )
    PromotionCandidate.objects.create(
        tenant=acme, kind="fact", subject="plan", claim="The customer is on Pro.", claim_hash="0" * 64,
        source_event=first.source_event, proposed_by="agent:bot",
    )  # fmt: skip
    thresholds = labeling_thresholds(policy)
    adoption.propose(acme, lead, thresholds=thresholds, mode="shadow", reason="tighter", evidence={"n": 3})
    ReplaySet.objects.create(tenant=acme, name="gold", content='{"id": "c1"}\n', cases=1, imported_by=lead)
    receipts.record(
        acme, [receipts.Used("resp-1", timezone.now(), ((first.pk, first.version),), user_id="u-1")]
    )
    settings.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.0/8"]
    webhooks.endpoint_create(
        acme, url="http://127.0.0.1:9/hooks", kinds=["forgotten", "erased"], by=f"user:{admin.pk}"
    )
    request_forget(memory=first, reason="asked to", seen_version=first.row_version, by=lead)
    erase_subject(tenant=acme, user_id="u-dana", reason="GDPR request", requested_by=f"user:{admin.pk}")
    assert webhooks.fan_out(acme.pk, send=False)  # the erasure's change, to be delivered
    webhooks.notify(acme, "health.regressed", "unreviewed:1", {"rate": 0.4, "previous_rate": 0.02})
    make_memory(acme)  # one in force that no person moved, for a sampled audit
    sample = sampling.draw(tenant=acme, population="unreviewed", by=f"user:{lead.pk}", precision=0.3)
    audit_results.label_record(item=sample.drawn.first(), labeler=labeler, outcome="true")
    schedule.set_plan(acme, by="user:1", every_days=7, precision=0.05, confidence=0.9, budget=300, share=0.3)
    holds.set_rules(acme, hold_classes=["tool", "import"], by="user:1")
    GateChange.objects.create(
        tenant=acme, agent="support-bot", channel="chat", kind="fact", decision="contradicted", is_open=False,
        labels=12, wrong=3, precision_low=0.52, target=0.95, changed_by="system:test",
        changed_at=timezone.now(),
    )  # fmt: skip
    verification.verify_and_record(acme, by="system:test")
    assert verification.problem_in(acme) is None
    spare = make_memory(acme)
    return {
        "spare_user": make_user("spare"),
        "spare_event": spare.source_event,
        "spare_change": MemoryChange.objects.get(memory=spare),
        "admin": admin,
        "planless": Tenant.objects.create(slug="umbrella", name="Umbrella"),
    }


def labeling_thresholds(policy):
    from memory_review.assessments.policy import Thresholds

    return Thresholds.from_data(policy.thresholds)


def sealed_row(kind: str, tenant):
    model = seals.model_for(kind)
    column = "pk" if model.seal_tenant == "pk" else model.seal_tenant
    return model, model._base_manager.filter(**{column: tenant.pk}).order_by("pk").first()


@pytest.mark.parametrize("kind", sorted(CASES))
def test_an_edited_row_is_named(acme, world, kind):
    model, row = sealed_row(kind, acme)
    column, value = CASES[kind].edit
    with around_the_application():
        model._base_manager.filter(pk=row.pk).update(**{column: value})

    problem = verification.problem_in(acme)

    name = model._meta.verbose_name
    assert f"{name} {row.pk} was changed around the application: it no longer matches its seal" in str(
        problem
    )


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_deleted_row_is_named(acme, world, kind):
    model, row = sealed_row(kind, acme)
    if kind == "tenant":
        pytest.skip("a tenant's rows and its ledger go with it; the checkpoint case below covers that")
    with around_the_application() as cursor:
        cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE id = %s", [row.pk])

    problem = verification.problem_in(acme)

    assert f"{model._meta.verbose_name} {row.pk} was deleted around the application (sealed at #" in str(
        problem
    )


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_row_inserted_around_the_application_is_named(acme, world, kind):
    model, row = sealed_row(kind, acme)
    copy = {f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields if not f.primary_key}
    copy.update(CASES[kind].copy)
    if kind == "membership":
        copy["user_id"] = world["spare_user"].pk
    if kind == "verdict":
        copy["event_id"] = world["spare_event"].pk
    if kind == "delivery":
        copy["change_id"] = world["spare_change"].pk
    if kind in ("audit_plan", "trust_rules"):  # one a tenant: a forged one goes to a tenant without
        copy["tenant_id"] = world["planless"].pk
    with around_the_application():
        # The plain manager's bulk insert: no save(), so no seal, as with SQL typed at a prompt.
        (inserted,) = model._base_manager.bulk_create([model(**copy)])
    tenant = (
        inserted if kind == "tenant" else world["planless"] if kind in ("audit_plan", "trust_rules") else acme
    )

    problem = verification.problem_in(tenant)

    assert (
        f"{model._meta.verbose_name} {inserted.pk} has no seal: it was inserted around the application"
        in str(problem)
    )


def test_a_row_put_back_as_it_was_before_a_sealed_change_is_named(acme, world):
    """Rolling back a revocation (an old row, with an old seal, restored) differs from the latest seal."""
    token = seals.model_for("api_token").objects.get(tenant=acme)
    token.revoked_at, token.revoked_by = timezone.now(), "user:1"
    token.save()
    with around_the_application():
        type(token)._base_manager.filter(pk=token.pk).update(revoked_at=None, revoked_by=None)

    assert f"api token {token.pk} was changed around the application" in str(verification.problem_in(acme))


def test_the_verdict_behind_a_policy_move_deleted_is_named(acme, policy):
    from tests.factories import flagged

    memory = flagged(acme, policy, still_true=0.45)
    verdict = memory.verdicts.get()
    with around_the_application() as cursor:
        cursor.execute("DELETE FROM assessments_verdict WHERE id = %s", [verdict.pk])

    assert f"verdict {verdict.pk} was deleted around the application" in str(verification.problem_in(acme))


def test_a_memory_inserted_as_active_with_no_transition_is_named(acme):
    from memory_review.memories.models import Memory

    memory = make_memory(acme)
    fields = {
        f.attname: getattr(memory, f.attname) for f in Memory._meta.concrete_fields if not f.primary_key
    }
    with around_the_application():
        (planted,) = Memory._base_manager.bulk_create(
            [Memory(**{**fields, "subject": "planted", "status": "active"})]
        )

    assert f"memory {planted.pk} has no seal" in str(verification.problem_in(acme))


def test_memberships_removed_through_the_application_are_sealed_not_flagged(acme, lead):
    Membership.objects.get(user=lead).delete()

    assert verification.problem_in(acme) is None


def test_the_seals_of_one_tenant_do_not_vouch_for_another(acme, globex, world):
    assert verification.problem_in(globex) is None
    with around_the_application() as cursor:
        cursor.execute(
            "UPDATE audit_seal SET tenant_id = %s WHERE tenant_id = %s AND kind = 'memory'",
            [globex.pk, acme.pk],
        )

    assert verification.problem_in(globex) is not None
    assert verification.problem_in(acme) is not None


def test_a_change_through_the_application_verifies(acme, world):
    """Not a false alarm: every sealed write the product makes keeps the trail intact."""
    model, row = sealed_row("policy", acme)
    row.mode = "retired"
    row.save(update_fields=["mode"])
    model.objects.filter(pk=row.pk).update(note="retired in a test")

    assert verification.problem_in(acme) is None
    assert Seal.objects.filter(kind="policy", object_id=row.pk).count() == 3  # created, retired, noted


def test_a_proposals_proposer_changed_is_named(acme, world):
    model, proposal = sealed_row("proposal", acme)
    with around_the_application():
        model._base_manager.filter(pk=proposal.pk).update(proposed_by=world["admin"])

    assert f"policy proposal {proposal.pk} was changed around the application" in str(
        verification.problem_in(acme)
    )


# -- how an agent learns to forget (issue 27, item 3) -------------------------------------------


def test_the_erased_change_deleted_from_the_feed_is_named(acme, world):
    erased = MemoryChange.objects.filter(tenant=acme, kind="erased").first()
    with around_the_application() as cursor:
        cursor.execute("DELETE FROM agents_webhookdelivery WHERE change_id = %s", [erased.pk])
        cursor.execute("DELETE FROM memories_memorychange WHERE id = %s", [erased.pk])

    assert "was deleted around the application" in str(verification.problem_in(acme))


def test_a_change_moved_to_another_position_is_named(acme, world):
    last = MemoryChange.objects.filter(tenant=acme).order_by("-seq").first()
    with around_the_application():
        MemoryChange._base_manager.filter(pk=last.pk).update(seq=last.seq + 5)

    assert f"memory change {last.pk} was changed around the application" in str(verification.problem_in(acme))


def test_an_endpoint_cursor_moved_past_its_deliveries_is_named(acme, world):
    endpoint = webhooks.WebhookEndpoint.objects.get(tenant=acme)
    with around_the_application():
        webhooks.WebhookEndpoint._base_manager.filter(pk=endpoint.pk).update(cursor=10**6)

    assert f"webhook endpoint {endpoint.pk} was changed around the application" in str(
        verification.problem_in(acme)
    )
