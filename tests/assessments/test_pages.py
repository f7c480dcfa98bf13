"""The assessment screens: what the worker did, its cost, and what moved."""

import pytest

from memory_review.assessments.invalidation import observe_event, run_invalidation
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
    [row] = client.get("/t/acme/assessments/").context["assessments"]
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
