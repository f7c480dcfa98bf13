"""The agent loop's reads (issue 16): what is in force for a scope, and the change feed."""

import json
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory_review.agents.models import Receipt
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import MemoryChange
from memory_review.memories.services import memory_forget
from memory_review.tenancy.tokens import token_create
from memory_review.workflow.decisions import memory_decide, memory_rewrite
from tests.factories import make_memory, make_user, memory_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(acme):
    return token_create(tenant=acme, name="support-bot")[1]


def get(client, path: str, token: str, **headers):
    return client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}", **headers)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [m["id"] for m in response.json()["memories"]]


def move(memory, action: str, kind: str = "user", who: str = "7"):
    transition(
        obj=memory,
        action=action,
        actor=Actor(kind, who),
        reason=f"{action} it",
        seen_version=memory.row_version,
    )


# -- what is in force ---------------------------------------------------------------------------


def test_a_scope_gets_its_own_memories_every_broader_one_and_every_narrower_one_but_no_one_elses(
    client, acme, globex, token
):
    everyone = make_memory(acme)
    mine = make_memory(acme, user_id="cust-1")
    my_thread = make_memory(acme, user_id="cust-1", thread_id="t-1")
    other_thread = make_memory(acme, user_id="cust-1", thread_id="t-2")
    bots_for_me = make_memory(acme, user_id="cust-1", agent_id="support-bot")
    bots_for_everyone = make_memory(acme, agent_id="support-bot")
    someone_else = make_memory(acme, user_id="cust-2")
    make_memory(globex, user_id="cust-1")

    user = get(client, "/api/v1/t/acme/memories?user_id=cust-1", token)
    thread = get(client, "/api/v1/t/acme/memories?user_id=cust-1&thread_id=t-1", token)
    conversation = get(
        client, "/api/v1/t/acme/memories?user_id=cust-1&agent_id=support-bot&thread_id=t-1", token
    )
    tenant_wide = get(client, "/api/v1/t/acme/memories", token)

    # Everything for cust-1, with any agent, in any thread (issue 28: 24 of 26 were missing).
    assert ids(user) == [
        everyone.pk,
        mine.pk,
        my_thread.pk,
        other_thread.pk,
        bots_for_me.pk,
        bots_for_everyone.pk,
    ]
    assert ids(thread) == [everyone.pk, mine.pk, my_thread.pk, bots_for_me.pk, bots_for_everyone.pk]
    assert ids(conversation) == [everyone.pk, mine.pk, my_thread.pk, bots_for_me.pk, bots_for_everyone.pk]
    assert someone_else.pk in ids(tenant_wide) and someone_else.pk not in ids(user)


def test_narrower_false_reads_a_column_left_out_as_null_only(client, acme, token):
    everyone = make_memory(acme)
    mine = make_memory(acme, user_id="cust-1")
    make_memory(acme, user_id="cust-1", thread_id="t-1")
    make_memory(acme, user_id="cust-1", agent_id="support-bot")
    bots = make_memory(acme, user_id="cust-1", agent_id="support-bot", thread_id="t-1")

    user = get(client, "/api/v1/t/acme/memories?user_id=cust-1&narrower=false", token)
    bot = get(client, "/api/v1/t/acme/memories?user_id=cust-1&agent_id=support-bot&narrower=false", token)
    tenant_wide = get(client, "/api/v1/t/acme/memories?narrower=false", token)

    assert ids(user) == [everyone.pk, mine.pk]
    assert bots.pk not in ids(bot) and len(ids(bot)) == 3
    assert ids(tenant_wide) == [everyone.pk]
    assert user.json()["narrower"] is False


def test_live_memories_are_in_force_one_under_review_is_marked_and_the_rest_are_not(client, acme, token):
    statuses = ["active", "needs_review", "frozen", "contradicted", "superseded", "expired", "deleted"]
    memories = {status: memory_in(acme, status) for status in statuses}

    found = {m["id"]: m for m in get(client, "/api/v1/t/acme/memories", token).json()["memories"]}

    assert set(found) == {memories[s].pk for s in ("active", "needs_review", "frozen")}
    assert found[memories["active"].pk]["standing"] == "in_force"
    assert found[memories["frozen"].pk]["standing"] == "in_force"
    assert found[memories["needs_review"].pk]["standing"] == "under_review"


def test_past_its_hard_ttl_nothing_is_in_force_whatever_its_status_says(client, acme, token):
    lapsed = make_memory(acme, valid_until=timezone.now() + timedelta(minutes=5))
    lasting = make_memory(acme)

    with pytest.MonkeyPatch.context() as patch:
        later = timezone.now() + timedelta(minutes=6)
        patch.setattr(timezone, "now", lambda: later)
        answer = ids(get(client, "/api/v1/t/acme/memories", token))

    lapsed.refresh_from_db()
    assert lapsed.status == "active"  # the sweep has not run
    assert answer == [lasting.pk]


def test_each_memory_carries_its_content_scope_and_who_decided_last(client, acme, token):
    lead = make_user("dana", acme, "lead")
    lead.first_name, lead.last_name = "Dana", "Reyes"
    lead.save()
    memory = make_memory(acme, user_id="cust-1", content="Prefers email.", kind="preference")
    move(memory, "flag", "policy", "v1")
    move(memory, "approve", "user", str(lead.pk))
    untouched = make_memory(acme, user_id="cust-1")

    found = get(client, "/api/v1/t/acme/memories?user_id=cust-1", token).json()["memories"]

    first = found[0]
    assert first["content"] == "Prefers email." and first["kind"] == "preference" and first["version"] == 1
    assert first["scope"] == {"user_id": "cust-1", "agent_id": None, "thread_id": None}
    assert first["status"] == "active" and first["valid_until"] is None
    decision = first["latest_decision"]
    assert (decision["action"], decision["by"], decision["by_name"]) == (
        "approve",
        f"user:{lead.pk}",
        "Dana Reyes",
    )
    assert found[1]["id"] == untouched.pk
    assert found[1]["latest_decision"]["action"] == "written"
    assert found[1]["latest_decision"]["by_name"] == "agent support-bot"


def test_pages_follow_by_keyset_with_the_same_queries_whatever_the_size(client, acme, token):
    memories = [make_memory(acme) for _ in range(5)]
    for memory in memories[:3]:
        move(memory, "freeze")

    first = get(client, "/api/v1/t/acme/memories?limit=2", token).json()
    second = get(client, f"/api/v1/t/acme/memories?limit=2&after={first['next_after']}", token).json()
    third = get(client, f"/api/v1/t/acme/memories?limit=2&after={second['next_after']}", token).json()

    pages = [[m["id"] for m in page["memories"]] for page in (first, second, third)]
    assert pages == [[m.pk for m in memories[:2]], [m.pk for m in memories[2:4]], [memories[4].pk]]
    assert third["next_after"] is None
    # The token and its seal, the feed's head (its transaction a savepoint pair inside the test's),
    # the page, its moves, the people: as many for 2 rows as for 50.
    with CaptureQueriesContext(connection) as small:
        get(client, "/api/v1/t/acme/memories?limit=2", token)
    for _ in range(45):
        move(make_memory(acme), "freeze")
    with CaptureQueriesContext(connection) as large:
        assert len(ids(get(client, "/api/v1/t/acme/memories?limit=50", token))) == 50
    assert len(large.captured_queries) == len(small.captured_queries) <= 10


def test_an_unchanged_answer_is_a_304_and_a_changed_one_is_not(client, acme, token):
    memory = make_memory(acme)
    first = get(client, "/api/v1/t/acme/memories", token)
    etag = first["ETag"]

    again = get(client, "/api/v1/t/acme/memories", token, HTTP_IF_NONE_MATCH=etag)
    move(memory, "freeze")
    changed = get(client, "/api/v1/t/acme/memories", token, HTTP_IF_NONE_MATCH=etag)

    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_as_of_answers_with_what_was_in_force_then_from_the_audit_trail(client, acme, token):
    before = timezone.now()
    forgotten = make_memory(acme, content="Lives at 12 Elm Street.")
    frozen_later = make_memory(acme)
    flagged = make_memory(acme)
    move(flagged, "flag", "policy", "v1")
    time.sleep(0.01)
    then = timezone.now()
    time.sleep(0.01)
    memory_forget(
        memory=forgotten, actor=Actor("user", "7"), reason="asked", seen_version=forgotten.row_version
    )
    move(frozen_later, "freeze")
    move(flagged, "contradict", "policy", "v1")
    stamp = then.isoformat().replace("+00:00", "Z")

    at_then = get(client, f"/api/v1/t/acme/memories?as_of={stamp}", token).json()
    at_start = get(
        client, f"/api/v1/t/acme/memories?as_of={before.isoformat().replace('+00:00', 'Z')}", token
    )
    now = ids(get(client, "/api/v1/t/acme/memories", token))

    rows = {m["id"]: m for m in at_then["memories"]}
    assert set(rows) == {forgotten.pk, frozen_later.pk, flagged.pk}
    assert rows[flagged.pk]["status"] == "needs_review" and rows[flagged.pk]["standing"] == "under_review"
    assert rows[frozen_later.pk]["status"] == "active"
    assert rows[forgotten.pk]["content"] is None and rows[forgotten.pk]["content_erased"]  # erased since
    assert ids(at_start) == []
    assert now == [frozen_later.pk]


@pytest.mark.parametrize(
    ("query", "field", "says"),
    [
        ("user=cust-1", "user", "unknown field"),
        ("limit=0", "limit", "greater than or equal to 1"),
        ("limit=501", "limit", "less than or equal to 500"),
        ("after=-1", "after", "greater than or equal to 0"),
        ("after=abc", "after", "valid integer"),
        ("as_of=2026-01-01T10:00:00", "as_of", "timezone"),
        ("as_of=yesterday", "as_of", "datetime"),
        ("kind=gossip", "kind", "unknown kind 'gossip'"),
        ("user_id=a&user_id=b", "user_id", "given more than once"),
        (f"user_id={'x' * 129}", "user_id", "128"),
    ],
)
def test_a_bad_query_is_a_400_naming_the_parameter(client, acme, token, query, field, says):
    response = get(client, f"/api/v1/t/acme/memories?{query}", token)

    assert response.status_code == 400
    assert says in response.json()["fields"][field]


# -- the change feed ----------------------------------------------------------------------------


def feed(client, token, after=0, **extra):
    query = "&".join(f"{k}={v}" for k, v in {"after": after, **extra}.items())
    response = get(client, f"/api/v1/t/acme/changes?{query}", token)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_feed_lists_each_change_in_order_with_who_and_why(client, acme, token):
    lead = make_user("dana", acme, "lead")
    memory = make_memory(acme, content="Ships on Fridays.")
    move(memory, "flag", "policy", "v1")
    memory_decide(memory=memory, action="approve", user=lead, reason="checked with the customer",
                  seen_version=memory.row_version, can_lead=True)  # fmt: skip

    body = feed(client, token)

    kinds = [(c["kind"], c["from_status"], c["status"]) for c in body["changes"]]
    assert kinds == [
        ("created", None, "active"),
        ("moved", "active", "needs_review"),
        ("moved", "needs_review", "active"),
    ]
    last = body["changes"][-1]
    assert (
        last["by"] == f"user:{lead.pk}"
        and last["by_name"] == "dana"
        and last["reason"] == "checked with the customer"
    )
    assert last["content"] == "Ships on Fridays." and last["memory_id"] == memory.pk
    assert body["cursor"] == body["changes"][-1]["seq"] and body["more"] is False
    assert feed(client, token, after=body["cursor"])["changes"] == []


def test_a_forgotten_memory_is_a_tombstone_everywhere_in_the_feed(client, acme, token):
    memory = make_memory(acme, content="Card ends 4242.")
    move(memory, "freeze")
    memory_forget(
        memory=memory, actor=Actor("user", "7"), reason="customer asked", seen_version=memory.row_version
    )

    changes = feed(client, token)["changes"]

    assert [c["kind"] for c in changes] == ["created", "moved", "forgotten"]
    assert all(c["tombstone"] and c["content"] is None for c in changes)
    assert "4242" not in str(changes)


def test_a_rewrite_reads_as_the_old_one_superseded_then_the_new_one_rewritten(client, acme, token):
    lead = make_user("dana", acme, "lead")
    old = make_memory(acme, subject="plan", content="On the basic plan.")
    move(old, "flag", "policy", "v1")
    outcome = memory_rewrite(memory=old, user=lead, content="On the pro plan.", reason="upgraded",
                             seen_version=old.row_version, can_lead=True)  # fmt: skip

    changes = feed(client, token)["changes"][-2:]

    assert (changes[0]["kind"], changes[0]["memory_id"], changes[0]["status"]) == (
        "moved",
        old.pk,
        "superseded",
    )
    new = changes[0]["superseded_by"]
    assert new == outcome.successor.pk
    assert (changes[1]["kind"], changes[1]["memory_id"], changes[1]["content"]) == (
        "rewritten",
        new,
        "On the pro plan.",
    )
    assert changes[1]["version"] == 2


def test_the_feed_pages_and_says_when_more_is_ready(client, acme, token):
    for _ in range(5):
        make_memory(acme)

    first = feed(client, token, limit=2)
    rest = feed(client, token, after=first["cursor"], limit=10)

    assert [c["seq"] for c in first["changes"]] == [1, 2] and first["more"] is True
    assert [c["seq"] for c in rest["changes"]] == [3, 4, 5] and rest["more"] is False


def test_a_long_poll_with_nothing_new_waits_then_answers_empty_with_the_same_cursor(client, acme, token):
    make_memory(acme)
    started = time.monotonic()

    body = feed(client, token, after=1, wait=0.6)

    assert time.monotonic() - started >= 0.6
    assert body == {"changes": [], "cursor": 1, "more": False}


@pytest.mark.parametrize(
    ("query", "field", "says"),
    [
        ("", "after", "Field required"),
        ("after=99", "after", "beyond the end of this tenant's feed (0)"),
        ("after=0&wait=31", "wait", "less than or equal to 30"),
        ("after=0&wait=soon", "wait", "valid number"),
        ("after=0&since=1", "since", "unknown field"),
    ],
)
def test_a_bad_cursor_or_wait_is_a_400_naming_it(client, acme, token, query, field, says):
    response = get(client, f"/api/v1/t/acme/changes?{query}", token)

    assert response.status_code == 400
    assert says in response.json()["fields"][field]


def test_another_tenants_token_gets_a_404_and_the_feed_holds_only_its_own_tenant(client, acme, globex, token):
    make_memory(acme)
    make_memory(globex)
    globex_token = token_create(tenant=globex, name="their-bot")[1]

    receipt = {
        "responses": [
            {"response_id": "r", "used_at": "2026-12-01T10:00:00Z", "memories": [{"id": 1, "version": 1}]}
        ]
    }
    refused = [
        get(client, "/api/v1/t/acme/changes?after=0", globex_token),
        get(client, "/api/v1/t/acme/memories", globex_token),
        client.post("/api/v1/t/acme/receipts", json.dumps(receipt), content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer {globex_token}"),
    ]  # fmt: skip
    own = feed(client, token)["changes"]

    assert [r.status_code for r in refused] == [404, 404, 404]
    assert not Receipt.objects.exists()
    assert len(own) == 1 and MemoryChange.objects.count() == 2
