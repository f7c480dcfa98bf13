"""Memory health's regression reaches the tenant's agents (issue 31): the hourly job writes one
`health.regressed` notice for a regressed period and one delivery to each endpoint that named the
kind, posted signed to a real receiver on loopback with the figures; running again writes nothing;
no regression, no notice. And the notices themselves: once under a key, a kind that is not a
notice's refused, the page, the API and the log show them, tampering with them is named."""

import json

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from memory_review.agents import webhooks
from memory_review.agents.models import Notice, WebhookDelivery
from memory_review.audit import verification
from memory_review.quality import notices, schedule
from memory_review.quality.models import AuditSample
from memory_review.tenancy.models import Role
from tests.api.test_webhooks import endpoints_unheard, loopback_allowed  # noqa: F401 (autouse fixtures)
from tests.factories import around_the_application, make_memory, make_user
from tests.review.test_memory_health_page import periods, steady  # noqa: F401 (fixtures)
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    serving = Receiver()
    yield serving
    serving.stop()


def register(tenant, url, kinds):
    return webhooks.endpoint_create(tenant, url=url, kinds=kinds, by="user:1")


def send_waiting(tenant) -> list[str]:
    """What the workers would do with the deliveries queued when the notice committed."""
    waiting = WebhookDelivery.objects.filter(tenant=tenant, state="pending").order_by("pk")
    return [webhooks.send(tenant.pk, pk) for pk in waiting.values_list("pk", flat=True)]


def test_a_notice_is_posted_signed_to_the_endpoints_that_named_it_and_no_other(acme, receiver):
    asked, secret = register(acme, receiver.url, ["health.regressed"])
    register(acme, receiver.url + "/all-changes", [])  # every kind of change: not the notices

    notice = webhooks.notify(acme, "health.regressed", "unreviewed:2", {"rate": 0.4}, send=False)
    assert send_waiting(acme) == ["delivered"]

    [got] = receiver.received
    assert got.path == "/hooks/memory" and WebhookDelivery.objects.get().endpoint == asked
    assert Webhook(secret).verify(got.body, got.headers) == {  # the reference verifier
        "type": "health.regressed",
        "timestamp": notice.created_at.isoformat(),
        "tenant": "acme",
        "data": {"rate": 0.4},
    }


@pytest.mark.usefixtures("periods")  # email's preferences: 1 wrong of 30 yesterday, 20 of 30 today
def test_a_regression_the_hourly_job_finds_is_posted_once_with_its_figures(acme, receiver):
    second = AuditSample.objects.order_by("drawn_at").last()
    asked, secret = register(acme, receiver.url, ["health.regressed"])
    register(acme, receiver.url + "/changes", ["forgotten", "erased"])
    register(acme, receiver.url + "/all-changes", [])  # every kind of change: not the notices
    gone, _ = register(acme, receiver.url + "/gone", ["health.regressed"])
    webhooks.endpoint_remove(gone, by="user:1")

    schedule.draw_due()  # beat's hourly job
    assert send_waiting(acme) == ["delivered"]

    notice = Notice.objects.get()
    assert (notice.kind, notice.key) == ("health.regressed", f"unreviewed:{second.pk}")
    delivery = WebhookDelivery.objects.get(notice=notice)
    assert delivery.endpoint == asked
    [got] = receiver.received
    assert got.path == "/hooks/memory" and got.headers["webhook-id"] == delivery.msg_id
    body = Webhook(secret).verify(got.body, got.headers)  # the reference verifier
    assert (body["type"], body["tenant"]) == ("health.regressed", "acme")
    assert body["timestamp"] == notice.created_at.isoformat()
    data = body["data"]
    assert data["population"] == "unreviewed" and data["sample_id"] == second.pk
    assert data["rate"] == pytest.approx(20 / 50) and data["previous_rate"] == pytest.approx(1 / 50)
    assert data["low"] < data["rate"] < data["high"]
    assert data["change"] == pytest.approx(19 / 50)
    assert 0 < data["change_low"] < data["change"] < data["change_high"]  # worse beyond chance
    assert data["test"] == "Newcombe's MOVER interval for a difference of proportions, 95%"
    assert data["period_end"] == second.period_end.isoformat()
    assert "most of it from mail-bot's email preferences" in data["sentence"]
    assert data["worst_stratum"]["channel"] == "email" and data["page"] == "/t/acme/health/"

    schedule.draw_due()  # the next hour: the same period, told already
    assert Notice.objects.count() == 1 and WebhookDelivery.objects.filter(notice__isnull=False).count() == 1
    assert send_waiting(acme) == [] and len(receiver.received) == 1
    assert verification.problem_in(acme) is None  # the notice and its delivery are sealed as written


@pytest.mark.usefixtures("steady")  # 2 wrong of 30, then 4: within chance
def test_a_period_no_worse_beyond_chance_tells_no_one(acme, receiver):
    register(acme, receiver.url, ["health.regressed"])

    assert notices.notify_regressions(acme) == 0
    assert not Notice.objects.exists() and not WebhookDelivery.objects.exists()


@pytest.mark.parametrize(
    ("kind", "key", "problem"),
    [
        ("health.improved", "unreviewed:1", "unknown notice kind 'health.improved'; the notice kinds are"),
        ("forgotten", "unreviewed:1", "unknown notice kind 'forgotten'"),  # a change is not a notice
        ("health.regressed", "", "a notice's key is 1 to 120 characters"),
        ("health.regressed", "k" * 121, "a notice's key is 1 to 120 characters"),
    ],
)
def test_a_notice_of_no_known_kind_or_without_a_key_is_refused_and_nothing_is_written(
    acme, receiver, kind, key, problem
):
    register(acme, receiver.url, [])

    with pytest.raises(webhooks.NoticeRefused, match=problem):
        webhooks.notify(acme, kind, key, {"rate": 0.5})

    assert not Notice.objects.exists() and not WebhookDelivery.objects.exists()


def test_a_second_notice_under_the_same_key_writes_nothing(acme, receiver):
    register(acme, receiver.url, ["health.regressed"])

    first = webhooks.notify(acme, "health.regressed", "decisions:7", {"rate": 0.3}, send=False)
    again = webhooks.notify(acme, "health.regressed", "decisions:7", {"rate": 0.9}, send=False)

    assert first is not None and again is None
    assert Notice.objects.get().data == {"rate": 0.3} and WebhookDelivery.objects.count() == 1


def test_an_endpoint_registers_for_the_notice_on_the_page_and_its_log_shows_the_notice(
    client, acme, receiver
):
    client.force_login(make_user("acme-admin", acme, Role.ADMIN))
    form = client.get("/t/acme/webhooks/").content.decode()
    assert 'value="health.regressed"' in form

    made = client.post("/t/acme/webhooks/new/", {"url": receiver.url, "kinds": ["health.regressed"]})
    assert made.status_code == 200
    webhooks.notify(
        acme, "health.regressed", "unreviewed:3", {"words": "memories in force", "page": "/t/acme/health/"}
    )
    delivery = WebhookDelivery.objects.get()

    log = client.get(f"/t/acme/webhooks/{delivery.endpoint_id}/")

    assert log.status_code == 200
    page = log.content.decode()
    assert "health.regressed<br>" in page and f"<code>{delivery.msg_id}</code>" in page
    assert '<a href="/t/acme/health/">memories in force</a>' in page


def test_the_api_lists_a_notice_delivery_and_takes_the_notice_kind(client, acme, receiver):
    from memory_review.tenancy.tokens import token_create

    auth = {"HTTP_AUTHORIZATION": f"Bearer {token_create(tenant=acme, name='support-bot')[1]}"}
    made = client.post(
        "/api/v1/t/acme/webhooks",
        json.dumps({"url": receiver.url, "kinds": ["health.regressed", "erased"]}),
        content_type="application/json",
        **auth,
    )
    assert made.status_code == 201, made.content
    notice = webhooks.notify(acme, "health.regressed", "unreviewed:4", {"rate": 0.2}, send=False)

    [row] = client.get(f"/api/v1/t/acme/webhooks/{made.json()['id']}", **auth).json()["deliveries"]

    assert (row["kind"], row["notice_id"], row["change_seq"], row["memory_id"]) == (
        "health.regressed", notice.pk, None, None,
    )  # fmt: skip


def test_a_notice_delivery_moved_to_another_notice_around_the_application_is_named(acme, receiver):
    register(acme, receiver.url, ["health.regressed"])
    webhooks.notify(acme, "health.regressed", "unreviewed:5", {"rate": 0.2}, send=False)
    other = Notice.objects.create(tenant=acme, kind="health.regressed", key="unreviewed:6", data={})
    delivery = WebhookDelivery.objects.get()
    assert verification.problem_in(acme) is None

    with around_the_application():
        WebhookDelivery._base_manager.filter(pk=delivery.pk).update(notice=other)

    problem = str(verification.problem_in(acme))
    assert f"{WebhookDelivery._meta.verbose_name} {delivery.pk} was changed around the application" in problem


def test_the_migration_seals_the_deliveries_made_before_notices_again_and_verification_holds(acme, receiver):
    """audit.0022: a delivery sealed without `notice_id` (as every delivery was before) would look
    edited around the application; the migration seals each again with it."""
    import importlib

    from django.apps import apps
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    from memory_review.integrity import seals

    register(acme, receiver.url, [])
    make_memory(acme)
    webhooks.fan_out(acme.pk, send=False)
    before = MigrationLoader(connection).project_state(("audit", "0021_trust_rules_sealed")).apps
    old = before.get_model("agents", "webhookdelivery")
    old.seal_kind, old.seal_tenant = "delivery", "tenant_id"
    old.seal_fields = ("endpoint_id", "change_id", "msg_id", "created_at")
    seals.baseline(old, [acme.pk])  # the seal a delivery carried before this change
    assert "was changed around the application" in str(verification.problem_in(acme))

    importlib.import_module("memory_review.audit.migrations.0022_notices_sealed").seal_deliveries_again(
        apps, None
    )

    assert verification.problem_in(acme) is None


def test_a_failure_to_tell_one_tenant_is_logged_and_its_draws_still_made(acme, monkeypatch, caplog):
    make_memory(acme)

    def broken(tenant):
        raise RuntimeError("the health figures did not answer")

    monkeypatch.setattr(notices, "notify_regressions", broken)

    assert schedule.draw_due(timezone.now()) == 2  # both populations, drawn all the same
    assert f"tenant {acme.pk}'s regression notices failed" in caplog.text


def test_a_regression_overtaken_by_the_next_periods_labels_within_the_hour_is_still_told(acme, labeler):
    """Day two regressed (20 of 30 wrong against 1); before the hourly job ran, day three was
    drawn and labeled just as badly (no worse than day two: no flag of its own). Day two's notice
    is still written, once, against day one."""
    from memory_review.quality import sampling
    from tests.review.test_memory_health_page import labeled

    first, second = periods.__wrapped__(acme, labeler)
    third = sampling.draw(tenant=acme, population="unreviewed", by="system:audit-schedule", precision=0.01)
    labeled(third, labeler, {"email": 20})

    assert notices.notify_regressions(acme) == 1
    assert notices.notify_regressions(acme) == 0
    notice = Notice.objects.get()
    assert notice.key == f"unreviewed:{second.pk}"
    assert notice.data["previous_rate"] == pytest.approx(1 / 50, abs=0.02)


def test_labels_that_reveal_a_regression_tell_the_agents_without_waiting_for_the_hour(
    acme, labeler, monkeypatch, django_capture_on_commit_callbacks
):
    """Once labels commit, one regression check is queued for a minute later, however many labels
    that minute brings; the check clears the flag as it starts and tells the agents."""
    from django.core.cache import cache

    from memory_review.quality import results, sampling
    from memory_review.quality.tasks import notify_regressions
    from tests.review.test_memory_health_page import labeled

    for _ in range(30):
        make_memory(acme, source="email", kind="preference", agent_id="mail-bot")
    first = sampling.draw(tenant=acme, population="unreviewed", by="system:audit-schedule", precision=0.01)
    AuditSample.objects.filter(pk=first.pk).update(drawn_at=timezone.now() - timezone.timedelta(days=1))
    labeled(first, labeler, {"email": 1})
    second = sampling.draw(tenant=acme, population="unreviewed", by="system:audit-schedule", precision=0.01)
    queued = []

    class Signature:
        def __init__(self, name, args):
            self.name, self.args = name, args

        def apply_async(self, countdown):
            queued.append((self.name, self.args, countdown))

    monkeypatch.setattr(results.current_app, "signature", Signature)

    with django_capture_on_commit_callbacks(execute=True):
        labeled(second, labeler, {"email": 20})

    assert queued == [(results.NOTIFY_TASK, (acme.pk,), results.NOTIFY_AFTER_SECONDS)]  # 30 labels, one check
    assert not Notice.objects.exists()
    notify_regressions(acme.pk)  # what the worker runs a minute later
    assert Notice.objects.get().key == f"unreviewed:{second.pk}"
    assert cache.get(results.notify_key(acme.pk)) is None  # the next label queues the next check
