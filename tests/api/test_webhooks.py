"""Webhooks (issue 16, item 3): endpoints registered through the API and the page, every change
posted to a real HTTP receiver on loopback and checked with the Standard Webhooks reference
verifier, retries under one webhook-id, the delivery log and redelivery, disabling after
failures, inward targets refused, and another tenant's endpoints out of reach."""

import json
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from standardwebhooks import Webhook

from memory_review.agents import targets, webhooks
from memory_review.agents.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from memory_review.lifecycle import Actor, transition
from memory_review.memories.services import memory_forget
from memory_review.tenancy.models import Role
from memory_review.tenancy.tokens import token_create
from tests.factories import make_memory, make_user
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    """The tests' receiver is on loopback, which production refuses: allowed here explicitly."""
    settings.WEBHOOK_ALLOW_NETWORKS = ["127.0.0.0/8"]
    settings.WEBHOOK_RETRY_SECONDS = [0.0, 0.0, 0.0]
    return settings


@pytest.fixture(autouse=True)
def endpoints_unheard(settings):
    """The cache keeps what each endpoint has shown (an answer in time, a try in flight) by its
    id, and ids come round again from test to test: each test keys its own."""
    default = settings.CACHES["default"]
    prefix = f"{default.get('KEY_PREFIX', '')}-{uuid.uuid4().hex[:8]}"
    settings.CACHES = {"default": {**default, "KEY_PREFIX": prefix}}


@pytest.fixture
def receiver():
    serving = Receiver()
    yield serving
    serving.stop()


@pytest.fixture
def token(acme):
    return token_create(tenant=acme, name="support-bot")[1]


def api(client, method: str, path: str, token: str, body=None):
    call = getattr(client, method)
    extra = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is None:
        return call(path, **extra)
    return call(path, json.dumps(body), content_type="application/json", **extra)


def register(client, token, url, **body):
    response = api(client, "post", "/api/v1/t/acme/webhooks", token, {"url": url, **body})
    assert response.status_code == 201, response.content
    return response.json()


def deliver_all(tenant) -> list[str]:
    """What the workers would do: fan the changes out and try each delivery that is due."""
    webhooks.fan_out(tenant.pk, send=False)
    return [
        webhooks.send(tenant.pk, pk) for pk in webhooks.due(tenant.pk, timezone.now() + timedelta(days=2))
    ]


@contextmanager
def another_worker(task, *args):
    """`task(*args)` in a thread of its own, as a second webhook process would run it; its
    outcome is in the list once the block ends."""
    outcome = []

    def run():
        try:
            outcome.append(task(*args))
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield outcome
    finally:
        thread.join(timeout=30)


def wait_for(condition, what: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def forget(memory):
    memory_forget(memory=memory, actor=Actor("user", "7"), reason="asked", seen_version=memory.row_version)


# -- delivery ---------------------------------------------------------------------------------


def test_a_forget_is_posted_signed_as_standard_webhooks_says_and_as_a_tombstone(
    client, acme, token, receiver
):
    memory = make_memory(acme, content="Lives at 12 Elm Street.", user_id="cust-1")
    created = register(client, token, receiver.url, description="support-bot's cache")

    forget(memory)
    assert deliver_all(acme) == ["delivered"]

    [got] = receiver.received
    body = Webhook(created["secret"]).verify(got.body, got.headers)  # the reference verifier
    assert body["type"] == "memory.forgotten"
    assert body["tenant"] == "acme"
    data = body["data"]
    assert (data["memory_id"], data["kind"], data["status"], data["tombstone"]) == (
        memory.pk,
        "forgotten",
        "deleted",
        True,
    )
    assert data["content"] is None and b"Elm Street" not in got.body
    delivery = WebhookDelivery.objects.get()
    assert got.headers["webhook-id"] == delivery.msg_id
    assert delivery.state == "delivered" and delivery.last_code == 200
    with pytest.raises(Exception, match="signature"):
        Webhook(webhooks.new_secret()).verify(got.body, got.headers)


def test_an_endpoint_hears_changes_from_its_registration_on_and_only_the_kinds_it_asked_for(
    client, acme, token, receiver
):
    before = make_memory(acme)
    register(client, token, receiver.url, kinds=["forgotten", "erased"])
    after = make_memory(acme)  # created: not a kind it asked for
    forget(after)

    deliver_all(acme)

    kinds = [json.loads(r.body)["type"] for r in receiver.received]
    assert kinds == ["memory.forgotten"]
    assert json.loads(receiver.received[0].body)["data"]["memory_id"] == after.pk
    assert before.pk not in {d.change.memory_id for d in WebhookDelivery.objects.select_related("change")}


def test_every_kind_of_change_reaches_an_endpoint_that_asked_for_all(client, acme, token, receiver):
    register(client, token, receiver.url)
    memory = make_memory(acme)
    transition(obj=memory, action="freeze", actor=Actor("user", "7"), reason="hold", seen_version=1)

    deliver_all(acme)

    bodies = [json.loads(r.body) for r in receiver.received]
    assert [b["type"] for b in bodies] == ["memory.created", "memory.moved"]
    assert [(b["data"]["from_status"], b["data"]["status"]) for b in bodies] == [
        (None, "active"),
        ("active", "frozen"),
    ]
    assert bodies[1]["data"]["reason"] == "hold"
    assert bodies[0]["data"]["seq"] < bodies[1]["data"]["seq"]


def test_a_failing_receiver_is_tried_again_under_the_same_webhook_id_and_the_log_says_so(
    client, acme, token, receiver
):
    receiver.answers = [500, 503]
    hook = register(client, token, receiver.url)
    make_memory(acme)

    outcomes = deliver_all(acme) + deliver_all(acme) + deliver_all(acme)

    assert outcomes == ["will retry", "will retry", "delivered"]
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    assert all(Webhook(hook["secret"]).verify(r.body, r.headers) for r in receiver.received)
    log = api(client, "get", f"/api/v1/t/acme/webhooks/{hook['id']}", token).json()
    [entry] = log["deliveries"]
    assert entry["state"] == "delivered" and entry["attempts"] == 3
    assert [t["code"] for t in entry["tries"]] == [500, 503, 200]
    assert all(t["latency_ms"] is not None and t["finished"] for t in entry["tries"])
    assert log["failures_in_a_row"] == 0


def test_a_receiver_trickling_its_answer_is_cut_off_at_the_deadline_and_the_try_says_so(
    client, acme, token, receiver, settings
):
    settings.WEBHOOK_DEADLINE_S, settings.WEBHOOK_TIMEOUT_S = 2.0, 10.0
    receiver.trickle = 0.5  # a byte every half second: no read ever waits 10 s; the answer takes 20
    register(client, token, receiver.url)
    make_memory(acme)

    started = time.monotonic()
    outcomes = deliver_all(acme)
    took = time.monotonic() - started

    assert outcomes == ["will retry"]
    assert took < settings.WEBHOOK_DEADLINE_S + 3  # the deadline, not the receiver's 20 s
    [attempt] = WebhookAttempt.objects.all()
    assert attempt.code is None
    assert attempt.error == "no answer within the 2 s deadline (connect, send and read together)"
    assert 1500 <= attempt.latency_ms < 5000


@pytest.mark.django_db(transaction=True)  # the second worker is a thread with its own connection
def test_a_new_endpoint_gets_one_try_in_flight_and_the_others_wait_without_spending_a_try(
    client, acme, token, receiver, settings
):
    settings.WEBHOOK_DEADLINE_S = 2.0
    receiver.trickle = 0.5  # a hostile receiver from its very first delivery
    register(client, token, receiver.url)
    make_memory(acme)
    make_memory(acme, subject="second")
    webhooks.fan_out(acme.pk, send=False)
    first, second = WebhookDelivery.objects.order_by("pk")

    with another_worker(webhooks.send, acme.pk, first.pk) as outcome:
        wait_for(lambda: len(receiver.received) == 1, "the first try to reach the receiver")
        assert webhooks.send(acme.pk, second.pk) == "put back: its endpoint has a try in flight"
        second.refresh_from_db()
        assert (second.attempts, second.state, second.queued_at) == (0, "pending", None)  # no try spent
        assert second.next_attempt_at > timezone.now()
        assert len(receiver.received) == 1  # one webhook process held, not two
    assert outcome == ["will retry"]

    second.refresh_from_db()  # the try that ended handed its turn on: queued again, still unspent
    assert (second.attempts, second.state) == (0, "pending")
    assert second.queued_at is not None and second.next_attempt_at <= timezone.now()


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_that_answered_in_time_runs_several_tries_at_once_up_to_the_setting(
    client, acme, token, receiver, settings
):
    settings.WEBHOOK_TRIES_AT_ONCE = 2
    receiver.delay = 1.0
    register(client, token, receiver.url)
    make_memory(acme)
    assert deliver_all(acme) == ["delivered"]  # it answered within the deadline
    for n in range(3):
        make_memory(acme, subject=f"plan-{n}")
    webhooks.fan_out(acme.pk, send=False)
    one, two, three = WebhookDelivery.objects.filter(attempts=0).order_by("pk")

    with another_worker(webhooks.send, acme.pk, one.pk) as first:
        wait_for(lambda: len(receiver.received) == 2, "the first try to reach the receiver")
        time.sleep(0.3)  # the two tries record their answers apart (SQLite takes one writer)
        with another_worker(webhooks.send, acme.pk, two.pk) as second:
            wait_for(lambda: len(receiver.received) == 3, "a second try in flight at the same time")
            assert webhooks.send(acme.pk, three.pk) == "put back: its endpoint has a try in flight"
    assert first == second == ["delivered"]
    three.refresh_from_db()
    assert (three.attempts, three.state) == (0, "pending")


def test_an_endpoint_that_runs_out_of_time_goes_back_to_one_try_at_a_time(
    client, acme, token, receiver, settings
):
    settings.WEBHOOK_DEADLINE_S, settings.WEBHOOK_TRIES_AT_ONCE = 1.0, 4
    register(client, token, receiver.url)
    make_memory(acme)
    assert deliver_all(acme) == ["delivered"]  # answered in time: four at once
    receiver.trickle = 0.5
    make_memory(acme, subject="slow")
    assert deliver_all(acme) == ["will retry"]  # ran out of time
    make_memory(acme, subject="waiting")
    webhooks.fan_out(acme.pk, send=False)
    [waiting] = WebhookDelivery.objects.filter(attempts=0)

    with webhooks._endpoint_turn(waiting.endpoint_id) as held:  # another worker's try in flight
        assert held
        assert webhooks.send(acme.pk, waiting.pk) == "put back: its endpoint has a try in flight"
    waiting.refresh_from_db()
    assert (waiting.attempts, waiting.state) == (0, "pending")

    receiver.trickle = 0  # it answers in time again
    assert sorted(deliver_all(acme)) == ["delivered", "delivered"]


def test_a_worker_that_died_holding_the_endpoints_token_blocks_it_only_until_the_token_lapses(
    client, acme, token, receiver, settings
):
    settings.WEBHOOK_DEADLINE_S = 0.5  # the token lapses 5.5 s after it was taken
    register(client, token, receiver.url)
    make_memory(acme)
    webhooks.fan_out(acme.pk, send=False)
    delivery = WebhookDelivery.objects.get()
    killed = webhooks._endpoint_turn(delivery.endpoint_id)
    assert killed.__enter__()  # taken, and never given back: the worker was killed

    assert webhooks.send(acme.pk, delivery.pk) == "put back: its endpoint has a try in flight"
    time.sleep(5.6)
    assert deliver_all(acme) == ["delivered"]
    assert WebhookDelivery.objects.get().attempts == 1  # the put-back cost no try
    del killed


def test_with_the_cache_unreachable_every_delivery_is_tried_as_before_the_limit(
    client, acme, token, receiver, settings
):
    register(client, token, receiver.url)
    for n in range(3):
        make_memory(acme, subject=f"plan-{n}")
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        }
    }

    assert deliver_all(acme) == ["delivered"] * 3
    assert len(receiver.received) == 3


def test_past_the_last_retry_a_delivery_is_given_up_and_a_redelivery_sends_it_under_its_id(
    client, acme, token, receiver
):
    receiver.default = 500
    hook = register(client, token, receiver.url)
    make_memory(acme)
    for _ in range(4):
        deliver_all(acme)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.last_code) == ("failed", 4, 500)
    assert deliver_all(acme) == []  # given up: nothing is due

    receiver.default = 204
    answer = api(
        client, "post", f"/api/v1/t/acme/webhooks/{hook['id']}/deliveries/{delivery.pk}/redeliver", token
    )
    assert answer.status_code == 202, answer.content
    assert deliver_all(acme) == ["delivered"]
    assert {r.headers["webhook-id"] for r in receiver.received} == {delivery.msg_id}
    again = api(
        client, "post", f"/api/v1/t/acme/webhooks/{hook['id']}/deliveries/{delivery.pk}/redeliver", token
    )
    assert again.status_code == 202  # delivered ones can be sent again too
    refused = api(
        client, "post", f"/api/v1/t/acme/webhooks/{hook['id']}/deliveries/{delivery.pk}/redeliver", token
    )
    assert refused.status_code == 400
    assert refused.json()["fields"] == {"delivery": "is waiting to be sent already"}


def test_after_repeated_failures_the_endpoint_is_disabled_and_the_admins_home_says_so(
    client, acme, token, receiver, settings
):
    settings.WEBHOOK_DISABLE_AFTER_FAILURES = 3
    settings.WEBHOOK_DISABLE_AFTER_HOURS = 0
    receiver.default = 500
    hook = register(client, token, receiver.url)
    for _ in range(3):
        make_memory(acme)
    deliver_all(acme)

    endpoint = WebhookEndpoint.objects.get(pk=hook["id"])
    assert endpoint.state == "disabled" and endpoint.disabled_by == webhooks.SYSTEM
    assert endpoint.disabled_reason.startswith("3 tries in a row failed since")
    make_memory(acme)
    assert deliver_all(acme) == []  # nothing is sent while disabled; it waits
    assert WebhookDelivery.objects.filter(state="pending").count() == 4
    [listed] = api(client, "get", "/api/v1/t/acme/webhooks", token).json()["webhooks"]
    assert (listed["state"], listed["waiting"], listed["given_up"]) == ("disabled", 4, 0)

    admin = make_user("acme-admin", acme, Role.ADMIN)
    client.force_login(admin)
    home = client.get("/t/acme/").content.decode()
    assert f'The webhook to <a href="/t/acme/webhooks/{endpoint.pk}/">{receiver.url}</a> was disabled' in home
    lead = make_user("acme-lead-2", acme, Role.LEAD)
    client.force_login(lead)
    assert "was disabled" not in client.get("/t/acme/").content.decode()  # admins manage webhooks

    receiver.default = 200
    client.force_login(admin)
    client.post(f"/t/acme/webhooks/{endpoint.pk}/state/", {"action": "enable"})
    assert sorted(deliver_all(acme)) == ["delivered"] * 4
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.failure_streak) == ("enabled", 0)


def test_a_worker_that_died_mid_send_leaves_an_open_try_and_its_lease_lets_another_finish(
    client, acme, token, receiver
):
    register(client, token, receiver.url)
    make_memory(acme)
    webhooks.fan_out(acme.pk, send=False)
    delivery = WebhookDelivery.objects.get()
    claimed = webhooks._claim(acme.pk, delivery.pk, timezone.now())  # then the worker is killed
    assert claimed is not None

    assert webhooks.send(acme.pk, delivery.pk) == "not due"  # held: no second sender meanwhile
    WebhookDelivery.objects.filter(pk=delivery.pk).update(leased_until=timezone.now() - timedelta(seconds=1))
    assert deliver_all(acme) == ["delivered"]

    tries = list(WebhookAttempt.objects.order_by("number").values_list("number", "code", "latency_ms"))
    assert tries[0] == (1, None, None) and tries[1][:2] == (2, 200)
    assert len(receiver.received) == 1
    # The killed worker's result, arriving late, changes nothing.
    assert webhooks._record(claimed, code=500, error="answered 500", latency_ms=9) == "will retry"
    assert WebhookDelivery.objects.get().state == "delivered"


def test_a_removed_endpoint_gets_nothing_more_and_its_waiting_deliveries_are_given_up(
    client, acme, token, receiver
):
    hook = register(client, token, receiver.url)
    make_memory(acme)
    webhooks.fan_out(acme.pk, send=False)

    assert api(client, "delete", f"/api/v1/t/acme/webhooks/{hook['id']}", token).status_code == 204
    make_memory(acme)

    assert deliver_all(acme) == []
    assert receiver.received == []
    assert list(WebhookDelivery.objects.values_list("state", "last_error")) == [
        ("failed", "the endpoint was removed")
    ]
    listed = api(client, "get", "/api/v1/t/acme/webhooks", token).json()["webhooks"]
    assert [(w["id"], w["state"], w["waiting"], w["given_up"]) for w in listed] == [
        (hook["id"], "removed", 0, 1)
    ]


# -- registration -----------------------------------------------------------------------------


def test_the_secret_is_shown_once_and_never_listed(client, acme, token, receiver):
    created = register(client, token, receiver.url)

    assert created["secret"].startswith("whsec_")
    listed = api(client, "get", "/api/v1/t/acme/webhooks", token)
    one = api(client, "get", f"/api/v1/t/acme/webhooks/{created['id']}", token)
    assert created["secret"] not in listed.content.decode() + one.content.decode()
    assert "secret" not in listed.json()["webhooks"][0]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (
            "http://127.0.0.1:8000/hook",
            "is at 127.0.0.1, a loopback, private, link-local or reserved address",
        ),
        ("http://localhost/hook", "a loopback, private, link-local or reserved address"),
        ("http://10.1.2.3/hook", "is at 10.1.2.3"),
        ("http://192.168.0.7/hook", "is at 192.168.0.7"),
        ("http://169.254.169.254/latest/meta-data", "is at 169.254.169.254"),
        ("http://100.64.0.1/hook", "is at 100.64.0.1"),
        ("http://[::1]/hook", "is at ::1"),
        ("http://[::ffff:127.0.0.1]/hook", "is at ::ffff:7f00:1"),
        ("http://0.0.0.0/hook", "is at 0.0.0.0"),
        ("http://224.0.0.1/hook", "is at 224.0.0.1"),
        ("ftp://hooks.example/x", "must start with https://"),
        ("http://93.184.215.14/hook", "must start with https://: plain http:// goes only to a network"),
        ("https://bot:pw@hooks.example/x", "must not carry a user name or password"),
        ("https:///x", "names no host"),
        ("https://hooks.example:99999/x", "is not a URL"),
        ("https://no-such-host.invalid/x", "host no-such-host.invalid does not resolve"),
    ],
)
def test_inward_and_malformed_targets_are_refused_naming_why_and_nothing_is_written(
    client, acme, token, loopback_allowed, url, problem
):
    loopback_allowed.WEBHOOK_ALLOW_NETWORKS = []  # as in production

    response = api(client, "post", "/api/v1/t/acme/webhooks", token, {"url": url})

    assert response.status_code == 400, response.content
    assert problem in response.json()["fields"]["url"]
    assert not WebhookEndpoint.objects.exists()


def test_a_target_that_turns_inward_after_registration_is_refused_at_delivery(
    client, acme, token, receiver, loopback_allowed
):
    register(client, token, receiver.url)
    make_memory(acme)
    loopback_allowed.WEBHOOK_ALLOW_NETWORKS = []

    assert deliver_all(acme) == ["will retry"]

    assert receiver.received == []
    assert "refused: the URL host 127.0.0.1 is at 127.0.0.1" in WebhookDelivery.objects.get().last_error


def test_the_delivery_goes_to_the_checked_address_with_the_name_kept_for_host_and_tls():
    target = targets.Target(
        url="https://hooks.example:8443/in?x=1", host="hooks.example", port=8443, address="::1"
    )

    assert target.pinned_url == "https://[::1]:8443/in?x=1"
    assert target.host_header == "hooks.example:8443"
    assert targets.Target("https://a.example/x", "a.example", 443, "93.184.215.14").host_header == "a.example"


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        (
            {"url": "https://a.example/x", "kinds": ["deleted"]},
            "kinds.0",
            "unknown kind of change or notice 'deleted'",
        ),
        ({"kinds": []}, "url", "Field required"),
        ({"url": "https://a.example/x", "secret": "mine"}, "secret", "unknown field"),
        ({"url": "https://a.example/x", "description": "x" * 121}, "description", "120"),
        ({"url": 7}, "url", "Input should be a valid string"),
    ],
)
def test_bad_registrations_are_a_400_naming_the_field(client, acme, token, body, field, problem):
    response = api(client, "post", "/api/v1/t/acme/webhooks", token, body)

    assert response.status_code == 400
    assert problem in response.json()["fields"][field]
    assert not WebhookEndpoint.objects.exists()


def test_another_tenants_token_cannot_reach_this_tenants_webhooks(client, acme, globex, token, receiver):
    hook = register(client, token, receiver.url)
    make_memory(acme)
    webhooks.fan_out(acme.pk, send=False)
    delivery = WebhookDelivery.objects.get()
    theirs = token_create(tenant=globex, name="their-bot")[1]

    assert api(client, "get", "/api/v1/t/acme/webhooks", theirs).status_code == 404
    assert api(client, "get", f"/api/v1/t/globex/webhooks/{hook['id']}", theirs).status_code == 404
    assert api(client, "delete", f"/api/v1/t/globex/webhooks/{hook['id']}", theirs).status_code == 404
    redeliver = f"/api/v1/t/globex/webhooks/{hook['id']}/deliveries/{delivery.pk}/redeliver"
    assert api(client, "post", redeliver, theirs).status_code == 404
    assert api(client, "get", "/api/v1/t/globex/webhooks", theirs).json() == {"webhooks": []}
    assert WebhookEndpoint.objects.get().state == "enabled"


def test_patch_disables_and_enables_an_endpoint(client, acme, token, receiver):
    hook = register(client, token, receiver.url)
    path = f"/api/v1/t/acme/webhooks/{hook['id']}"

    off = api(client, "patch", path, token, {"enabled": False})
    make_memory(acme)
    assert deliver_all(acme) == []
    on = api(client, "patch", path, token, {"enabled": True})

    assert (off.json()["state"], on.json()["state"]) == ("disabled", "enabled")
    assert deliver_all(acme) == ["delivered"]
    assert api(client, "patch", path, token, {"enabled": "yes"}).status_code == 400


# -- the page ---------------------------------------------------------------------------------


def test_an_admin_registers_an_endpoint_on_the_page_sees_the_secret_once_and_reads_the_log(
    client, acme, receiver
):
    admin = make_user("acme-admin", acme, Role.ADMIN)
    client.force_login(admin)

    made = client.post(
        "/t/acme/webhooks/new/", {"url": receiver.url, "kinds": ["created"], "description": "cache"}
    )
    assert made.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret in made.content.decode() and endpoint.kind_list == ["created"]
    assert endpoint.created_by == f"user:{admin.pk}"
    assert endpoint.secret not in client.get("/t/acme/webhooks/").content.decode()

    make_memory(acme, subject="plan")
    receiver.answers = [502]
    deliver_all(acme)
    log = client.get(f"/t/acme/webhooks/{endpoint.pk}/").content.decode()
    assert "1. " in log and " · 502 · " in log and "plan" in log
    assert endpoint.secret not in log


def test_the_log_pages_newest_first_through_its_own_deliveries_only(client, acme, token, receiver):
    ours = register(client, token, receiver.url)
    theirs = register(client, token, receiver.url + "other")
    for i in range(53):
        make_memory(acme, subject=f"m{i:02}")
    webhooks.fan_out(acme.pk, send=False)  # each change to both endpoints, interleaved
    own = list(WebhookDelivery.objects.filter(endpoint_id=ours["id"]).order_by("-pk"))
    endpoint = WebhookEndpoint.objects.get(pk=ours["id"])

    first, before = webhooks.log(endpoint, limit=50)
    rest, end = webhooks.log(endpoint, before=before, limit=50)

    assert [d.pk for d in first + rest] == [d.pk for d in own] and end is None
    assert {d.endpoint_id for d in first + rest} == {ours["id"]} != {theirs["id"]}
    client.force_login(make_user("acme-admin", acme, Role.ADMIN))
    page = client.get(f"/t/acme/webhooks/{ours['id']}/?before={before}").content.decode()
    assert [f"<code>{d.msg_id}</code>" in page for d in rest + first[-1:]] == [True, True, True, False]


def test_the_page_refuses_an_inward_url_naming_why(client, acme, loopback_allowed):
    loopback_allowed.WEBHOOK_ALLOW_NETWORKS = []
    client.force_login(make_user("acme-admin", acme, Role.ADMIN))

    answer = client.post("/t/acme/webhooks/new/", {"url": "http://10.0.0.5/hook"})

    assert answer.status_code == 400
    assert "The URL host 10.0.0.5 is at 10.0.0.5, a loopback, private" in answer.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("role", [Role.LEAD, Role.REVIEWER, Role.AUDITOR, Role.LABELER])
def test_only_admins_manage_webhooks(client, acme, role, receiver):
    client.force_login(make_user(f"acme-{role}", acme, role))

    assert client.get("/t/acme/webhooks/").status_code == 403
    assert client.post("/t/acme/webhooks/new/", {"url": receiver.url}).status_code == 403
    assert not WebhookEndpoint.objects.exists()


def test_a_transaction_of_many_changes_nudges_the_fan_out_once(acme, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        for _ in range(5):
            make_memory(acme)

    nudges = [c for c in callbacks if getattr(c, "once_key", None) == ("fan-out", acme.pk)]
    assert len(nudges) == 1
