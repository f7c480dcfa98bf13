"""Derived figures kept with their freshness (issue 17, item 2; calibration/figures.py): a small
tenant's are counted in the request; a larger one's come from the cache with their age, a job
counts them when their data moves, and a page with nothing kept yet says so and polls."""

import pytest
from django.core.cache import cache

from memory_review.calibration import figures, labeling
from memory_review.calibration.labeling import ItemRef
from memory_review.calibration.models import PolicyProposal
from memory_review.calibration.tasks import refresh_figure, refresh_stale_figures
from memory_review.lifecycle import Actor, transition
from tests.factories import judged, make_memory

pytestmark = pytest.mark.django_db

PAGES = {  # figure: the page that shows it
    "calibration": "/t/acme/calibration/",
    "disagreements": "/t/acme/promotions/disagreements/",
    "redecided": "/t/acme/policies/",
    "agreement": "/t/acme/labels/agreement/",
}
COMPARE = "/t/acme/calibration/compare/?confirm_min=0.7"


def clear_own_cache() -> None:
    """This run's keys go, no one else's. On Redis, cache.clear() is FLUSHDB, whatever the key
    prefix: it emptied the other pass's cache (make test runs two at once), and a kept figure
    vanished under a test that had just computed it."""
    from django.conf import settings

    backend = settings.CACHES["default"]
    if "redis" not in backend["BACKEND"].lower():
        cache.clear()
        return
    import redis

    client = redis.Redis.from_url(backend["LOCATION"])
    for name in client.scan_iter(match=f"{backend['KEY_PREFIX']}:*"):
        client.delete(name)


@pytest.fixture(autouse=True)
def empty_cache():
    clear_own_cache()
    yield
    clear_own_cache()


@pytest.fixture
def votes(acme, policy):
    made = []
    for subject, still_true, disposition in [
        ("delivery day", 0.92, "confirmed"),
        ("refund limit", 0.3, "contradicted"),
    ]:
        made.append(
            judged(make_memory(acme, subject=subject), policy, still_true=still_true, disposition=disposition)
        )
    return made


@pytest.fixture
def large(settings):
    """Every tenant counts as large: figures come from the cache and the job."""
    settings.FIGURES_INLINE_BELOW = 0


@pytest.fixture
def queued(monkeypatch):
    """The jobs queued (the suite's broker runs none): (name, tenant, params)."""
    sent = []

    class Signature:
        def __init__(self, args):
            self.args = args

        def delay(self):
            sent.append(self.args)

    monkeypatch.setattr(figures.current_app, "signature", lambda name, args: Signature(args))
    return sent


def test_a_small_tenant_counts_its_figures_in_the_request_and_says_nothing_of_their_age(client, lead, votes):
    client.force_login(lead)
    for url in [*PAGES.values(), COMPARE]:
        first, again = client.get(url), client.get(url)
        assert first.status_code == again.status_code == 200, url
        assert (
            "Figures as of" not in again.content.decode() and "Counting every" not in first.content.decode()
        )


@pytest.mark.parametrize("name", PAGES)
def test_a_large_tenant_waits_for_the_job_then_reads_the_kept_figure_and_its_age(
    client, lead, votes, acme, large, queued, name
):
    client.force_login(lead)
    waiting = client.get(PAGES[name]).content.decode()
    assert "Counting every stored vote" in waiting and 'hx-trigger="every 2s"' in waiting
    assert queued == [(name, acme.pk, {})]
    client.get(PAGES[name])
    assert len(queued) == 1  # one job at a time per figure: the second read found it running

    took = refresh_figure(name, acme.pk, {})  # what the worker runs
    assert isinstance(took, int)
    shown = client.get(PAGES[name]).content.decode()
    assert "Figures as of" in shown and "nothing they count has changed since" in shown
    assert "Counting every" not in shown


def test_new_data_makes_a_kept_figure_stale_says_what_moved_and_queues_one_job(
    client, lead, labeler, votes, acme, large, queued
):
    client.force_login(lead)
    figures.refresh("calibration", acme.pk, {})
    labeling.record(acme, labeler, ItemRef("verdict", votes[0].pk), outcome="confirmed")
    stale = client.get(PAGES["calibration"]).content.decode()
    assert "since then: new labels" in stale and "A job is counting them again" in stale
    assert queued == [("calibration", acme.pk, {})]
    figures.refresh("calibration", acme.pk, {})
    kept = client.get(PAGES["calibration"]).content.decode()
    assert "nothing they count has changed since" in kept
    # The charts are kept with their numbers, laid out once: the page draws them from the cache.
    assert kept.count('role="img"') == kept.count("data-legend") > 0


def test_a_memory_moving_stales_only_the_figures_that_rest_on_moves(acme, votes, lead, large):
    figures.refresh("calibration", acme.pk, {})
    figures.refresh("redecided", acme.pk, {})
    memory = votes[0].memory
    memory.refresh_from_db()
    transition(
        obj=memory,
        action="freeze",
        actor=Actor.user(lead),
        reason="checking",
        seen_version=memory.row_version,
    )
    assert figures.read("calibration", acme).fresh
    assert not figures.read("redecided", acme).fresh


def test_a_comparison_is_kept_per_candidate_and_propose_uses_the_numbers_shown(
    client, lead, votes, acme, large, queued
):
    client.force_login(lead)
    assert "Counting every" in client.get(COMPARE).content.decode()
    (job,) = queued
    # Proposing before the numbers are in proposes nothing and says why.
    data = {"confirm_min": "0.7", "mode": "shadow", "reason": "fewer confirmations"}
    refused = client.post("/t/acme/calibration/propose/", data, follow=True)
    assert "still being counted" in refused.content.decode()
    assert not PolicyProposal.objects.filter(tenant=acme).exists()
    figures.refresh(*job)
    client.post("/t/acme/calibration/propose/", data)
    (proposal,) = PolicyProposal.objects.filter(tenant=acme)
    assert proposal.evidence["stored_votes"]["verdicts"] == 2


def test_beat_queues_the_standing_figures_of_large_tenants_whose_data_moved(acme, votes, large, queued):
    assert refresh_stale_figures() == len(figures.STANDING)
    for name in figures.STANDING:
        figures.refresh(name, acme.pk, {})
    queued.clear()
    assert refresh_stale_figures() == 0 and queued == []


def test_every_registered_figure_is_computed_and_kept_through_the_real_cache(acme, votes):
    for name in figures.STANDING:
        kept = figures.refresh(name, acme.pk, {})
        assert cache.get(figures.key(name, acme.pk, {}))["mark"] == kept["mark"]


def test_search_sends_oracle_text_the_words_and_keeps_the_exact_like():
    """Oracle answers `textcontains` from its CONTEXT index and keeps LIKE's meaning (search.py);
    no Oracle server runs here, so the SQL Django would send is checked."""
    from memory_review.memories.models import Memory
    from memory_review.memories.search import text_query
    from memory_review.oracle.render import offline_connection

    assert text_query("Invoice 001") == "%Invoice% & %001%"
    assert text_query("a&b|c{d}") == "%a% & %b% & %c% & %d%"  # operators never reach Oracle Text
    assert text_query("%_-") is None
    query = Memory.objects.filter(subject__textcontains="invoice 001").query
    sql, params = query.get_compiler(connection=offline_connection()).as_sql()
    assert "CONTAINS(" in sql and "LIKE UPPER" in sql
    assert "%invoice% & %001%" in params and "%invoice 001%" in params
