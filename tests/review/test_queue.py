"""The review queue: riskiest first, filtered, counted, keyset-paged, and telling the reviewer
what the policy or a colleague took away."""

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory_review.lifecycle import Actor, transition
from memory_review.memories import search as text_search
from memory_review.workflow.claims import claim_take
from tests.factories import flagged, make_memory, make_user

pytestmark = pytest.mark.django_db


def shown(response) -> list[str]:
    return [memory.subject for memory in response.context["listing"].rows]


def test_it_lists_this_tenants_memories_in_review_only(client, acme, globex, lead, policy):
    from memory_review.assessments.services import policy_ensure_default

    mine = flagged(acme, policy, subject="mine")
    make_memory(acme, subject="settled")
    flagged(
        globex,
        policy_ensure_default(tenant=globex, created_by="t"),
        subject="theirs",
        content="Globex secret.",
    )
    client.force_login(lead)

    response = client.get("/t/acme/review/")

    assert shown(response) == ["mine"]
    page = response.content.decode()
    assert mine.content in page and "Globex secret." not in page
    assert f'href="/t/acme/memories/{mine.pk}/"' in page  # each row links to its memory page


def test_it_says_why_each_memory_is_there_with_the_actor_by_name(client, acme, lead, policy):
    memory = flagged(acme, policy, subject="flagged by policy")
    person = make_memory(acme, subject="flagged by a person")
    transition(obj=person, action="flag", actor=Actor.user(lead), reason="looks off", seen_version=1)
    lead.first_name, lead.last_name = "Maria", "Chen"
    lead.save()
    client.force_login(lead)

    rows = {m.subject: m for m in client.get("/t/acme/review/").context["listing"].rows}
    page = client.get("/t/acme/review/").content.decode()

    assert rows["flagged by policy"].last_move.actor_name == "policy v1"
    assert rows["flagged by policy"].last_move.assessment_id is not None
    assert rows["flagged by a person"].last_move.actor_name == "Maria Chen"
    assert "looks off" in page and "Maria Chen" in page and f"user:{lead.pk}" not in page
    assert f"/t/acme/assessments/{rows['flagged by policy'].last_move.assessment_id}/" in page
    assert memory.pk in {m.pk for m in rows.values()}


def test_the_closest_call_comes_first_then_the_oldest_flag(client, acme, lead, policy):
    with time_machine.travel(timezone.now() - timedelta(days=3)):
        flagged(acme, policy, subject="old and far", still_true=0.50)  # 0.15 from the band's edges
        flagged(acme, policy, subject="old and close", still_true=0.62)  # 0.03 from 0.65
    flagged(acme, policy, subject="new and close", still_true=0.38)  # 0.03 from 0.35
    flagged(acme, policy, subject="new and far", still_true=0.45)
    client.force_login(lead)

    assert shown(client.get("/t/acme/review/")) == [
        "old and close",
        "new and close",
        "new and far",
        "old and far",
    ]
    assert shown(client.get("/t/acme/review/?order=oldest"))[:2] == ["old and far", "old and close"]
    assert shown(client.get("/t/acme/review/?order=newest"))[0] == "new and far"


def test_every_filter_narrows_the_list_and_its_count(client, acme, lead, policy):
    flagged(acme, policy, subject="billing address", kind="preference", source="email")
    flagged(acme, policy, subject="warehouse hours", kind="config", source="slack", disposition="partial")
    with time_machine.travel(timezone.now() - timedelta(days=10)):
        flagged(acme, policy, subject="billing terms", kind="fact", source="email")
    client.force_login(lead)

    def listed(query: str) -> tuple[list[str], int]:
        response = client.get(f"/t/acme/review/?{query}")
        assert response.status_code == 200, response.content
        return sorted(shown(response)), response.context["listing"].total

    assert listed("q=BILLING") == (["billing address", "billing terms"], 2)
    assert listed("kind=config") == (["warehouse hours"], 1)
    assert listed("source=email") == (["billing address", "billing terms"], 2)
    assert listed("flagged_for=partial") == (["warehouse hours"], 1)
    assert listed("age=older") == (["billing terms"], 1)
    assert listed("age=1d") == (["billing address", "warehouse hours"], 2)
    assert listed("q=billing&source=email&age=1d") == (["billing address"], 1)


def test_it_filters_by_who_holds_the_claim(client, acme, lead, reviewer, policy):
    mine, theirs, _ = (flagged(acme, policy, subject=s) for s in ("mine", "theirs", "free"))
    claim_take(memory=mine, user=lead)
    claim_take(memory=theirs, user=reviewer)
    client.force_login(lead)

    assert shown(client.get("/t/acme/review/?claim=mine")) == ["mine"]
    assert shown(client.get("/t/acme/review/?claim=others")) == ["theirs"]
    assert shown(client.get("/t/acme/review/?claim=unclaimed")) == ["free"]


def test_a_bad_filter_is_a_400_that_names_it(client, acme, lead, policy):
    flagged(acme, policy)
    client.force_login(lead)

    response = client.get("/t/acme/review/?kind=rumour&order=sideways")

    assert response.status_code == 400
    page = response.content.decode()
    assert "kind:" in page and "rumour is not one of the available choices" in page
    assert "order:" in page


def test_a_long_queue_is_paged_by_keyset_forwards_and_back(client, acme, lead, policy):
    for i in range(53):
        flagged(acme, policy, subject=f"item {i:02d}", still_true=0.5)  # equal risk: ties on the gap
    client.force_login(lead)

    first = client.get("/t/acme/review/")
    after = first.context["listing"].page.next_cursor
    second = client.get(f"/t/acme/review/?after={after}")
    back = client.get(f"/t/acme/review/?before={second.context['listing'].page.prev_cursor}")

    assert len(shown(first)) == 50 and len(shown(second)) == 3
    assert sorted(shown(first) + shown(second)) == [f"item {i:02d}" for i in range(53)]
    assert shown(back) == shown(first)
    assert first.context["listing"].total == second.context["listing"].total == 53
    assert second.context["listing"].page.next_cursor is None
    assert "Next 50" in first.content.decode()


def test_a_damaged_page_link_says_so(client, acme, lead, policy):
    flagged(acme, policy)
    client.force_login(lead)

    response = client.get("/t/acme/review/?after=bm90IGEgY3Vyc29y")

    assert response.status_code == 400
    assert "this page link" in response.content.decode()


def test_queries_per_page_do_not_grow_with_the_queue(client, acme, lead, reviewer, policy):
    def queries_for_a_page() -> int:
        client.force_login(lead)
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/t/acme/review/?q=item").status_code == 200
        return len(captured)

    for i in range(3):
        claim_take(memory=flagged(acme, policy, subject=f"item {i}"), user=reviewer)
    queries_for_a_page()  # the search's sample of the tenant is drawn once every ten minutes a process
    small = queries_for_a_page()
    for i in range(3, 60):
        memory = flagged(acme, policy, subject=f"item {i}")
        if i % 2:
            claim_take(memory=memory, user=reviewer)
    assert queries_for_a_page() == small


def test_the_open_queue_learns_what_a_colleague_took_away(client, acme, lead, reviewer, policy):
    kept, taken = flagged(acme, policy, subject="kept"), flagged(acme, policy, subject="taken")
    reviewer.first_name = "Tomás"
    reviewer.save()
    client.force_login(lead)
    loaded = client.get("/t/acme/review/")
    since = loaded.context["loaded_at"].isoformat()

    transition(obj=taken, action="approve", actor=Actor.user(reviewer), reason="checked", seen_version=2)
    claim_take(memory=kept, user=reviewer)
    flagged(acme, policy, subject="arrived later")
    changes = client.get(
        "/t/acme/review/changes/",
        {"shown": f"{kept.pk},{taken.pk}", "since": since},
        headers={"HX-Request": "true"},
    )

    page = changes.content.decode()
    assert "“taken” left the queue: Tomás moved it to active" in page
    assert f'<tr id="memory-{taken.pk}" class="gone" hx-swap-oob="true"' in page
    assert f'<td id="claim-{kept.pk}" class="claim" hx-swap-oob="true">' in page and "Tomás" in page
    assert "1 new memory flagged since you loaded the queue" in page
    assert 'hx-trigger="every 10s"' in page  # it keeps polling
    assert 'hx-trigger="every 10s"' in loaded.content.decode()


def test_the_tenant_home_links_every_status_to_its_list(client, acme, lead, policy):
    flagged(acme, policy)
    client.force_login(lead)

    page = client.get("/t/acme/").content.decode()

    assert 'href="/t/acme/review/"' in page
    assert 'href="/t/acme/memories/?status=superseded"' in page
    for link in ("/t/acme/memories/", "/t/acme/promotions/", "/t/acme/assessments/"):
        assert f'href="{link}"' in page  # the navigation every page carries


def test_the_queue_works_for_a_user_who_reads_only(client, acme, auditor, policy):
    flagged(acme, policy)
    client.force_login(auditor)

    page = client.get("/t/acme/review/").content.decode()

    assert "Needs review" in page
    assert ">Approve<" not in page and ">Claim<" not in page and "Act on all" not in page


def test_a_user_of_another_tenant_gets_the_friendly_404(client, acme, globex_lead, policy):
    client.force_login(globex_lead)
    response = client.get("/t/acme/review/")
    assert response.status_code == 404
    assert "belongs to a tenant you are not a member of" in response.content.decode()


def test_a_member_with_no_memories_sees_an_empty_queue(client, acme):
    client.force_login(make_user("newcomer", acme, "reviewer"))
    assert "Nothing needs review" in client.get("/t/acme/review/").content.decode()


def test_the_changes_poll_refuses_what_it_cannot_read_by_name(client, acme, lead, policy):
    kept = flagged(acme, policy)
    client.force_login(lead)
    for query, named in (
        (f"shown={kept.pk}&since=2026-13-45T99:00", "since"),
        (f"shown={kept.pk}&since=yesterday", "since"),
        ("shown=abc,,1x&since=", "shown"),
    ):
        response = client.get(f"/t/acme/review/changes/?{query}", headers={"HX-Request": "true"})
        assert response.status_code == 400
        assert f"{named}: " in response.content.decode()
    blank = client.get("/t/acme/review/changes/?shown=&since=", headers={"HX-Request": "true"})
    assert blank.status_code == 200 and "left the queue" not in blank.content.decode()


@pytest.mark.parametrize("cursor", ["WzAuMSwgNSwgNV0", "WzUsIDVd", "WyJ4IiwgIjIwMjYtMDEtMDFUMDA6MDAiLCAxXQ"])
def test_a_tampered_page_link_is_a_400_on_every_list(client, acme, lead, policy, cursor):
    flagged(acme, policy)
    client.force_login(lead)
    for path in ("/t/acme/review/", "/t/acme/memories/"):
        response = client.get(f"{path}?after={cursor}")
        assert response.status_code == 400, path
        assert "this page link" in response.content.decode()


def test_the_changes_poll_refuses_ids_no_row_can_have(client, acme, lead, policy):
    kept = flagged(acme, policy)
    client.force_login(lead)
    for shown in ("²", "9" * 5000, "99999999999999999999999", f"{kept.pk},²"):
        response = client.get("/t/acme/review/changes/", {"shown": shown})
        assert response.status_code == 400 and "shown: " in response.content.decode()
    assert client.get("/t/acme/review/changes/", {"shown": f"{kept.pk}"}).status_code == 200


def test_new_arrivals_past_the_counted_size_are_said_as_more_than(client, acme, lead, policy, monkeypatch):
    from memory_review.review import lists

    monkeypatch.setattr(lists, "counted_up_to", lambda: 2)
    client.force_login(lead)
    since = client.get("/t/acme/review/").context["loaded_at"].isoformat()
    for i in range(4):
        flagged(acme, policy, subject=f"arrived {i}")

    page = client.get(
        "/t/acme/review/changes/", {"shown": "", "since": since}, headers={"HX-Request": "true"}
    )

    assert "More than 2 new memories flagged since you loaded the queue" in page.content.decode()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="trigram indexes are PostgreSQL's (make test's second pass)"
)
def test_the_queues_search_names_the_status_its_own_trigram_indexes_hold(client, acme, lead, policy):
    """memories/0011 and 0015: the queue's memories have trigram indexes of their own (at two
    tenants of 2,000,000, 4 ms where the whole table's took 30), the tenant in each key
    (search.TextKeys); PostgreSQL uses them only when the query names the status their WHERE
    does and writes the expression they hold, as the queue's search must go on doing (the
    planner's own words for both agree; which it reads at size is bench/pages.py's to show)."""
    flagged(acme, policy, subject="refund 0042")
    client.force_login(lead)
    text_search.probe.cache_clear()
    with CaptureQueriesContext(connection) as captured:
        assert shown(client.get("/t/acme/review/", {"q": "REFUND 00"})) == ["refund 0042"]
    [search] = [q["sql"] for q in captured.captured_queries if "memory_text_keys" in q["sql"]]
    # The text's keys are asked once, for subject and content both.
    assert sum("memory_text_probe" in q["sql"] for q in captured.captured_queries) == 1
    with connection.cursor() as cursor:
        found = "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE %s"
        cursor.execute(found, ["memory_queue_%_keys"])
        indexes = dict(cursor.fetchall())
    assert sorted(indexes) == ["memory_queue_content_keys", "memory_queue_subject_keys"]
    for definition in indexes.values():
        assert "USING gin" in definition and "WHERE ((status)::text = 'needs_review'::text)" in definition
    assert """"memories_memory"."status" = 'needs_review'""" in search
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + search)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    for column in ("(subject)::text", "content"):
        expression = f"memory_text_keys(tenant_id, {column})"
        assert sum(expression in definition for definition in indexes.values()) == 1 and expression in plan
