"""List, then watch (issue 28): GET memories carries the change feed's cursor its rows are
consistent with, so an agent builds its cache from the snapshot and follows the feed from there,
neither losing a change nor needing the tenant's whole history; and a scope reads the memories an
event in that scope reaches."""

import pytest

from memory_review.agents import feed
from memory_review.assessments.invalidation import candidates_for
from memory_review.lifecycle import Actor, transition
from memory_review.memories.services import event_record, memory_forget
from memory_review.tenancy.tokens import token_create
from memory_review.workflow.decisions import memory_rewrite
from tests.factories import make_memory, make_user

pytestmark = pytest.mark.django_db

LIVE = {"active", "needs_review", "frozen"}


@pytest.fixture
def token(acme):
    return token_create(tenant=acme, name="support-bot")[1]


def snapshot(client, token: str, **params) -> tuple[dict[int, dict], int, list[dict]]:
    """Every page of GET memories: the cache (memory id -> its row), the first page's cursor, and
    the pages as answered."""
    cache, pages, after = {}, [], 0
    while after is not None:
        answer = client.get(
            "/api/v1/t/acme/memories", {**params, "after": after}, HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert answer.status_code == 200, answer.content
        page = answer.json()
        pages.append(page)
        cache.update({m["id"]: {"status": m["status"], "version": m["version"]} for m in page["memories"]})
        after = page["next_after"]
    return cache, pages[0]["cursor"], pages


def follow(client, token: str, cache: dict[int, dict], cursor: int, scope: dict) -> int:
    """Apply every change after `cursor` whose scope this scope reaches, as the README's agent does."""
    more = True
    while more:
        answer = client.get(
            "/api/v1/t/acme/changes", {"after": cursor, "limit": 2}, HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        page = answer.json()
        for change in page["changes"]:
            assert change["seq"] == cursor + 1
            cursor = change["seq"]
            if not all(change["scope"][column] in (None, value) for column, value in scope.items()):
                continue
            if change["status"] in LIVE and not change["tombstone"]:
                cache[change["memory_id"]] = {"status": change["status"], "version": change["version"]}
            else:
                cache.pop(change["memory_id"], None)
        more = page["more"]
    return cursor


def act(memory, action: str, kind: str = "user") -> None:
    transition(
        obj=memory, action=action, actor=Actor(kind, "7"), reason=action, seen_version=memory.row_version
    )


def test_the_answer_carries_the_feeds_head_and_none_when_it_answers_for_a_past_time(client, acme, token):
    make_memory(acme, user_id="cust-1")
    act(make_memory(acme), "freeze")

    _, cursor, pages = snapshot(client, token, user_id="cust-1")
    _, _, then = snapshot(client, token, as_of="2026-01-01T00:00:00Z")

    assert cursor == feed.head(acme) == 3
    assert then[0]["cursor"] is None


def test_a_snapshot_and_the_feed_from_its_cursor_give_what_a_fresh_snapshot_gives(client, acme, token):
    scope = {"user_id": "cust-1"}
    mine = [make_memory(acme, user_id="cust-1") for _ in range(3)]
    bots = make_memory(acme, user_id="cust-1", agent_id="support-bot", thread_id="t-9")
    make_memory(acme, user_id="cust-2")
    head_before = feed.head(acme)

    cache, cursor, _ = snapshot(client, token, **scope, limit=2)
    memory_forget(memory=mine[0], actor=Actor("user", "7"), reason="asked", seen_version=mine[0].row_version)
    act(mine[1], "freeze")
    act(bots, "flag", "policy")
    act(mine[2], "flag", "policy")
    rewritten = memory_rewrite(
        memory=mine[2], user=make_user("dana", acme, "lead"), content="Fact, corrected.", reason="typo",
        seen_version=mine[2].row_version, can_lead=True,
    ).successor  # fmt: skip
    later = make_memory(acme, user_id="cust-1")
    make_memory(acme, user_id="cust-3")  # not this scope: heard, and left out
    follow(client, token, cache, cursor, scope)

    truth, _, _ = snapshot(client, token, **scope)
    assert cursor == head_before  # not 0: the feed starts where the snapshot stands
    assert cache == truth
    assert mine[0].pk not in cache and mine[2].pk not in cache
    assert {rewritten.pk, later.pk, bots.pk} <= set(cache)
    assert cache[bots.pk]["status"] == "needs_review"


def test_a_change_made_between_two_pages_is_heard_from_the_first_pages_cursor(client, acme, token):
    first, second = make_memory(acme), make_memory(acme)

    page_one = client.get("/api/v1/t/acme/memories?limit=1", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    memory_forget(memory=first, actor=Actor("user", "7"), reason="asked", seen_version=first.row_version)
    page_two = client.get(
        f"/api/v1/t/acme/memories?limit=1&after={page_one['next_after']}",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()
    cache = {m["id"]: {"status": m["status"], "version": m["version"]} for m in page_one["memories"]}
    cache.update({m["id"]: {"status": m["status"], "version": m["version"]} for m in page_two["memories"]})

    assert page_two["cursor"] == page_one["cursor"] + 1  # each page its own head; the first is the one
    follow(client, token, cache, page_one["cursor"], {})
    assert list(cache) == [second.pk]


@pytest.mark.parametrize(
    "scope",
    [
        {"user_id": "cust-1"},
        {"user_id": "cust-1", "agent_id": "support-bot"},
        {"user_id": "cust-1", "agent_id": "support-bot", "thread_id": "t-1"},
        {"agent_id": "support-bot"},
        {"thread_id": "t-2"},
        {},
    ],
    ids=lambda scope: "&".join(f"{k}={v}" for k, v in scope.items()) or "no scope",
)
def test_a_scope_reads_the_memories_an_event_in_that_scope_reaches(client, acme, token, scope):
    for user in (None, "cust-1", "cust-2"):
        for agent in (None, "support-bot", "billing-assistant"):
            for thread in (None, "t-1", "t-2"):
                make_memory(acme, user_id=user, agent_id=agent, thread_id=thread)
    event = event_record(tenant=acme, source="chat", text="The customer moved house.", **scope)

    read, _, _ = snapshot(client, token, **scope, limit=500)

    reached = set(candidates_for(event).values_list("pk", flat=True))
    assert set(read) == reached
    assert 0 < len(reached) < 27 or not scope


def test_a_change_in_another_scope_moves_the_cursor_but_keeps_the_304(client, acme, token):
    make_memory(acme, user_id="cust-1")
    first = client.get("/api/v1/t/acme/memories?user_id=cust-1", HTTP_AUTHORIZATION=f"Bearer {token}")
    act(make_memory(acme, user_id="cust-2"), "freeze")

    again = client.get(
        "/api/v1/t/acme/memories?user_id=cust-1",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_IF_NONE_MATCH=first["ETag"],
    )
    fresh = client.get("/api/v1/t/acme/memories?user_id=cust-1", HTTP_AUTHORIZATION=f"Bearer {token}")

    assert first["ETag"].startswith('W/"') and again.status_code == 304
    assert fresh.json()["cursor"] == first.json()["cursor"] + 2  # cust-2's memory written, then frozen
