"""A memory's page: what it says and where it came from, every move and every vote, the chart,
its linked memories, and what the agent believed at a given time."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory_review.assessments.services import policy_set_shadow
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import MemoryLink
from memory_review.memories.services import event_record, link_create, memory_write
from tests.factories import flagged, judged, make_memory

pytestmark = pytest.mark.django_db


def test_it_shows_the_memory_its_provenance_and_its_status_history_by_name(client, acme, lead, policy):
    memory = flagged(acme, policy, subject="delivery window", content="Deliveries arrive Monday to Friday.")
    transition(obj=memory, action="freeze", actor=Actor.user(lead), reason="legal hold", seen_version=2)
    lead.first_name, lead.last_name = "Maria", "Chen"
    lead.save()
    client.force_login(lead)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    assert "Deliveries arrive Monday to Friday." in page
    assert memory.source_event.text in page and "Chat message" in page
    assert "agent support-bot" in page and "agent:support-bot" not in page
    history = page[page.index('id="status-history"') :]
    assert history.index("Maria Chen") < history.index("policy v1")  # newest first
    assert "legal hold" in history and f"user:{lead.pk}" not in page
    assert "uncertain verdict, assessment" in history


def test_the_verdict_history_shows_all_six_votes_newest_first_with_versions(client, acme, lead, policy):
    memory = make_memory(acme, subject="support hours")
    policy_set_shadow(tenant=acme, thresholds={"confirm_min": 0.55, "margin": 0.02}, created_by="t")
    with time_machine.travel(timezone.now() - timedelta(days=2)):
        judged(memory, policy, disposition="confirmed", still_true=0.91)
    latest = judged(
        memory, policy, disposition="uncertain", still_true=0.47, hypothetical=0.13, directive=0.04
    )
    latest.shadow_policy, latest.shadow_disposition = policy.__class__.objects.get(mode="shadow"), "confirmed"
    latest.save()
    client.force_login(lead)

    response = client.get(f"/t/acme/memories/{memory.pk}/")

    rows = response.context["verdicts"].rows
    assert [v.disposition for v in rows] == ["uncertain", "confirmed"]
    votes = response.content.decode()[response.content.decode().index('id="verdicts"') :]
    for value in (
        "0.47",
        "0.13",
        "0.04",
        "0.90",
        "0.10",
    ):  # still_true, hypothetical, directive, bears, replaces
        assert f">{value}<" in votes
    assert "shadow v2: confirmed" in votes
    assert "policy v1 · questions test · jev-1.13.0" in votes
    assert latest.event.text[:40] in votes


def test_the_chart_plots_every_still_true_vote_against_the_policys_band_with_no_script(
    client, acme, lead, policy
):
    memory = make_memory(acme)
    for still_true, disposition in ((0.9, "confirmed"), (0.5, "uncertain"), (0.2, "contradicted")):
        judged(memory, policy, disposition=disposition, still_true=still_true)
    client.force_login(lead)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    chart = page.split('<figure class="chart still-true">', 1)[1].split("</figure>", 1)[0]
    said = re.findall(r"still true (0\.\d\d), (\w+)</title>", chart)
    assert sorted(said) == [("0.20", "Contradicted"), ("0.50", "Uncertain"), ("0.90", "Confirmed")]
    assert "confirm ≥ 0.65" in chart and "kill ≤ 0.35" in chart and 'class="band"' in chart
    assert chart.count('class="dead-band"') == 2
    assert "plotly" not in page  # the memory page loads no chart library: its first paint


def test_the_graph_shows_linked_memories_within_one_or_two_links_and_as_a_list(client, acme, lead):
    event = event_record(tenant=acme, source="chat", text="first")
    v1 = memory_write(
        event=event, kind="preference", subject="delivery", content="front door", written_by="a"
    )
    v2 = memory_write(
        event=event_record(tenant=acme, source="chat", text="second"),
        kind="preference",
        subject="delivery",
        content="front desk",
        written_by="a",
        supersedes=v1,
        actor=Actor.policy("v1"),
    )
    refinement = make_memory(acme, subject="delivery window")
    link_create(src=refinement, dst=v2, kind="refines", origin=MemoryLink.Origin.EXPLICIT)
    client.force_login(lead)

    one = client.get(f"/t/acme/memories/{v1.pk}/").content.decode()
    two = client.get(f"/t/acme/memories/{v1.pk}/?hops=2").content.decode()

    assert f'href="/t/acme/memories/{v2.pk}/"' in one and "delivery window" not in one
    assert "delivery window" in two
    assert "supersedes · explicit" in two and "refines · explicit" in two  # edges by type and origin
    assert "node-superseded centre" in two and "node-active" in two  # coloured by status
    assert "The same, as a list" in two
    fragment = client.get(f"/t/acme/memories/{v1.pk}/?part=graph&hops=2", headers={"HX-Request": "true"})
    assert fragment.content.decode().lstrip().startswith('<section id="graph"')


def test_as_of_shows_which_version_was_in_force_then(client, acme, lead):
    start = timezone.now() - timedelta(days=10)
    with time_machine.travel(start):
        event = event_record(tenant=acme, source="chat", text="Leave it at the door.", user_id="c1")
        v1 = memory_write(
            event=event,
            kind="preference",
            subject="delivery",
            content="At the door.",
            written_by="a",
            user_id="c1",
        )
    with time_machine.travel(start + timedelta(days=5)):
        event2 = event_record(tenant=acme, source="chat", text="Front desk from now on.", user_id="c1")
        v2 = memory_write(
            event=event2,
            kind="preference",
            subject="delivery",
            content="At the front desk.",
            written_by="a",
            user_id="c1",
            supersedes=v1,
            actor=Actor.policy("v1"),
        )
    client.force_login(lead)

    def held_at(moment) -> str | None:
        response = client.get(f"/t/acme/memories/{v2.pk}/", {"as_of": moment.strftime("%Y-%m-%dT%H:%M")})
        held = response.context["belief"].held
        return held.content if held else None

    assert held_at(start - timedelta(days=1)) is None
    assert held_at(start + timedelta(days=2)) == "At the door."
    assert held_at(start + timedelta(days=7)) == "At the front desk."


def test_a_bad_as_of_time_is_a_400_that_says_so(client, acme, lead):
    memory = make_memory(acme)
    client.force_login(lead)
    response = client.get(f"/t/acme/memories/{memory.pk}/", {"as_of": "last tuesday"})
    assert response.status_code == 400
    assert "is not a date and time" in response.content.decode()


def test_the_verdict_history_is_paged(client, acme, lead, policy):
    memory = make_memory(acme)
    verdicts = [judged(memory, policy, disposition="confirmed", still_true=0.9) for _ in range(23)]
    client.force_login(lead)

    first = client.get(f"/t/acme/memories/{memory.pk}/")
    cursor = first.context["verdicts"].next_cursor
    older = client.get(
        f"/t/acme/memories/{memory.pk}/?part=verdicts&after={cursor}", headers={"HX-Request": "true"}
    )

    assert [v.pk for v in first.context["verdicts"].rows] == [v.pk for v in verdicts[::-1][:20]]
    fragment = older.content.decode()
    assert fragment.lstrip().startswith('<div id="verdicts">')
    assert [int(pk) for pk in re.findall(r'<tr id="verdict-(\d+)">', fragment)] == [
        v.pk for v in verdicts[2::-1]
    ]


def test_queries_on_the_memory_page_do_not_grow_with_its_votes_and_links(client, acme, lead, policy):
    memory = flagged(acme, policy)
    neighbour = make_memory(acme)
    link_create(src=neighbour, dst=memory, kind="supports", origin="explicit")
    link_create(src=make_memory(acme), dst=neighbour, kind="refines", origin="assessment")

    def queries() -> int:
        client.force_login(lead)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/t/acme/memories/{memory.pk}/?hops=2").status_code == 200
        return len(captured)

    few = queries()
    for _i in range(30):
        judged(memory, policy, disposition="uncertain", still_true=0.5)
        neighbour = make_memory(acme)
        link_create(src=neighbour, dst=memory, kind="supports", origin="explicit")
        link_create(src=make_memory(acme), dst=neighbour, kind="refines", origin="assessment")
    assert queries() == few


@pytest.mark.parametrize("moment", ["2024-02-30T10:00", "2024-01-01T25:00"])
def test_an_impossible_as_of_time_is_a_400_too(client, acme, lead, moment):
    memory = make_memory(acme)
    client.force_login(lead)
    response = client.get(f"/t/acme/memories/{memory.pk}/", {"as_of": moment})
    assert response.status_code == 400
    assert "is not a date and time" in response.content.decode()


def test_a_memory_with_more_votes_than_the_chart_draws_shows_the_latest_and_says_so(
    client, acme, lead, policy, monkeypatch
):
    from memory_review.review import memory_page

    monkeypatch.setattr(memory_page, "CHART_VOTES", 3)
    memory = make_memory(acme)
    votes = [judged(memory, policy, still_true=0.1 * (i + 2)) for i in range(5)]
    client.force_login(lead)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()

    chart = page.split('<figure class="chart still-true">', 1)[1].split("</figure>", 1)[0]
    said = sorted(re.findall(r"still true (0\.\d\d)", chart))
    assert said == [f"{v.still_true:.2f}" for v in votes[-3:]]  # the latest three, not the first
    assert "The chart shows the latest 3 votes; every vote is in the table below" in chart


def test_a_hub_with_more_links_than_are_read_shows_the_first_and_says_so(client, acme, lead, monkeypatch):
    from memory_review.review import memory_page

    monkeypatch.setattr(memory_page, "LINKS_READ", 4)
    hub = make_memory(acme, subject="refund guideline")
    for i in range(6):
        link_create(
            src=make_memory(acme, subject=f"refund case {i}"), dst=hub, kind="supports",
            origin=MemoryLink.Origin.EXPLICIT,
        )  # fmt: skip
    client.force_login(lead)

    response = client.get(f"/t/acme/memories/{hub.pk}/")

    assert len(response.context["neighbourhood"].links) == 4
    assert "This memory has more links than the 4 read here" in response.content.decode()
    assert "refund case 0" in response.content.decode() and "refund case 5" not in response.content.decode()
