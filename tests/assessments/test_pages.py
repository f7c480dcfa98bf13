"""The assessment screens: what the worker did, its cost, and what moved."""

import pytest

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.assessments.models import Verdict
from memory_review.memories.services import event_record
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

LYON = "From now on deliveries go to the Lyon office instead of the Paris office."


@pytest.fixture
def judged(acme, policy, jev):
    make_memory(acme, subject="delivery-address", content="Deliveries go to the Paris office.")
    make_memory(acme, subject="support-hours", content="Support is staffed from 9 to 5 on weekdays.")
    event = event_record(tenant=acme, source="email", text=LYON)
    return run_invalidation(observe_event(event=event, enqueue=lambda a: None).pk, jev=jev)


def test_the_list_shows_each_assessment_with_its_cost_and_what_moved(client, lead, judged):
    client.force_login(lead)

    page = client.get("/t/acme/assessments/").content.decode()

    assert LYON[:60] in page
    assert f"${judged.cost_usd:.6f}" in page
    assert "offline stand-in" in page
    [row] = client.get("/t/acme/assessments/").context["listing"].rows
    assert (row.n_verdicts, row.n_applied) == (2, 1)


def test_the_detail_shows_the_votes_and_the_transition_each_verdict_caused(client, lead, judged):
    client.force_login(lead)

    page = client.get(f"/t/acme/assessments/{judged.pk}/").content.decode()

    assert "Deliveries go to the Paris office." in page
    assert "Superseded" in page
    assert 'status-superseded">superseded</span>' in page
    assert "no change" in page  # the unrelated memory
    assert 'hx-trigger="every 1s"' not in page  # done: nothing to poll


def test_a_running_assessment_polls_and_htmx_gets_only_the_results(client, lead, acme, policy):
    client.force_login(lead)
    event = event_record(tenant=acme, source="chat", text=LYON)
    queued = observe_event(event=event, enqueue=lambda a: None)

    page = client.get(f"/t/acme/assessments/{queued.pk}/").content.decode()
    fragment = client.get(
        f"/t/acme/assessments/{queued.pk}/", headers={"HX-Request": "true"}
    ).content.decode()

    assert 'hx-trigger="every 1s"' in page
    assert fragment.lstrip().startswith('<section id="results"')
    assert "<html" not in fragment


def test_another_tenants_assessment_is_a_404(client, globex_lead, judged):
    client.force_login(globex_lead)
    assert client.get(f"/t/acme/assessments/{judged.pk}/").status_code == 404
    assert client.get(f"/t/globex/assessments/{judged.pk}/").status_code == 404


def test_the_detail_shows_all_six_votes_and_the_model(client, lead, judged):
    client.force_login(lead)

    page = client.get(f"/t/acme/assessments/{judged.pk}/").content.decode()

    assert "hypo&shy;thetical" in page and "directive" in page
    assert "(model jev-1.13.0)" in page
    superseding = judged.verdicts.get(disposition="superseded")
    row = page[page.index(f'id="verdict-{superseding.pk}"') :]
    for vote in (superseding.hypothetical, superseding.directive):
        assert f">{vote:.2f}<" in row[: row.index("</tr>")]


@pytest.fixture
def wide(acme, policy, jev):
    """An event in the scope of 60 memories, one of which it supersedes."""
    make_memory(acme, subject="delivery-address", content="Deliveries go to the Paris office.")
    for i in range(59):
        make_memory(acme, subject=f"unrelated-{i}", content=f"The break room has {i} chairs.")
    event = event_record(tenant=acme, source="email", text=LYON)
    return run_invalidation(observe_event(event=event, enqueue=lambda a: None).pk, jev=jev)


def test_many_unrelated_verdicts_are_hidden_by_default_and_can_be_shown_a_page_at_a_time(client, lead, wide):
    client.force_login(lead)

    hidden = client.get(f"/t/acme/assessments/{wide.pk}/")
    shown = client.get(f"/t/acme/assessments/{wide.pk}/?unrelated=show")
    cursor = shown.context["verdicts"].next_cursor
    second = client.get(f"/t/acme/assessments/{wide.pk}/?unrelated=show&after={cursor}")

    assert [v.memory.subject for v in hidden.context["verdicts"].rows] == ["delivery-address"]
    assert "60 verdicts: 59 unrelated · 1 superseded; 1 moved a memory." in hidden.content.decode()
    assert "Unrelated ones are hidden." in hidden.content.decode()
    assert len(shown.context["verdicts"].rows) == 50 and len(second.context["verdicts"].rows) == 10
    assert f'href="?unrelated=show&after={cursor}"' in shown.content.decode()
    seen = [v.pk for v in shown.context["verdicts"].rows + second.context["verdicts"].rows]
    assert len(set(seen)) == 60  # every verdict once, none twice, across the two pages


def test_the_strongest_bearing_vote_comes_first_and_code_settled_ones_last(client, lead, acme, wide):
    memory = make_memory(acme, subject="no-source", content="Written from an erased event.")
    Verdict.objects.create(
        tenant=acme, assessment=wide, memory=memory, event=wide.event, row_version=1,
        disposition="no_source",
    )  # fmt: skip
    client.force_login(lead)

    shown = client.get(f"/t/acme/assessments/{wide.pk}/?unrelated=show")
    cursor = shown.context["verdicts"].next_cursor
    last = client.get(f"/t/acme/assessments/{wide.pk}/?unrelated=show&after={cursor}")

    bears = [v.bears for v in shown.context["verdicts"].rows + last.context["verdicts"].rows]
    assert bears == sorted(bears, reverse=True)
    assert shown.context["settled"] == [] and [v.memory for v in last.context["settled"]] == [memory]
    assert "No source (code)" in last.content.decode()


def test_a_damaged_page_link_is_a_400_that_says_so(client, lead, wide):
    client.force_login(lead)

    response = client.get(f"/t/acme/assessments/{wide.pk}/?after=not-a-cursor")

    assert response.status_code == 400
    assert "this page link is damaged" in response.content.decode()


def test_the_list_is_paged(client, acme, lead, policy):
    for i in range(55):
        observe_event(
            event=event_record(tenant=acme, source="chat", text=f"Event {i}."), enqueue=lambda a: None
        )
    client.force_login(lead)

    first = client.get("/t/acme/assessments/")
    cursor = first.context["listing"].next_cursor
    older = client.get(f"/t/acme/assessments/?after={cursor}")

    assert len(first.context["listing"].rows) == 50 and len(older.context["listing"].rows) == 5
    assert "Event 54." in first.content.decode() and "Event 0." in older.content.decode()
    assert f'href="?after={cursor}"' in first.content.decode()


@pytest.mark.parametrize(
    "value", [0.125, 0.005, 0.015, 0.335, 0.995, 0.994999, 1.0, 0.0, 1e-9, 0.30000000000000004]
)
def test_votes_are_shown_as_floatformat_shows_them_and_a_missing_one_as_a_dash(value):
    """The verdict rows are drawn in Python (review/rows.py) for speed; a vote reads the same as
    the template filter would write it, halves rounded up."""
    from django.template.defaultfilters import floatformat

    from memory_review.review.rows import prob

    assert prob(value) == floatformat(value, 2)
    assert prob(None) == "–"


def test_a_memory_written_as_markup_is_shown_as_text_in_the_verdict_rows(client, lead, acme, policy, jev):
    make_memory(
        acme,
        subject="<b>delivery</b>",
        content="<script>alert(1)</script> Deliveries go to the Paris office.",
    )
    event = event_record(tenant=acme, source="email", text=LYON)
    judged = run_invalidation(observe_event(event=event, enqueue=lambda a: None).pk, jev=jev)
    client.force_login(lead)

    page = client.get(f"/t/acme/assessments/{judged.pk}/").content.decode()

    assert "&lt;b&gt;delivery&lt;/b&gt;" in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
