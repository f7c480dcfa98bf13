"""Audit items in the labeling stream (issue 31, item 1): a sampled audit's items are handed out
beside the threshold items at the share the plan sets, blind to what the automation did, and
answered, skipped and undone through the same keys and forms."""

import re

import pytest
from django.utils.html import escape

from memory_review.calibration.models import Label
from memory_review.lifecycle import Actor, transition
from memory_review.quality import sampling, schedule, stream
from memory_review.quality.models import AuditLabel
from tests.factories import judged, make_memory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def shown(response) -> str:
    return re.search(r'data-item="([vca]\d+)"', response.content.decode()).group(1)


@pytest.fixture
def sample(acme):
    """A decisions sample: four memories the policy contradicted, each drawn."""
    killed = []
    for n in range(4):
        memory = make_memory(
            acme, subject=f"refund limit {n}", content=f"Refunds up to {n}00 EUR need no review."
        )
        transition(obj=memory, action="contradict", actor=Actor.policy("v1"), reason="x", seen_version=1)
        killed.append(memory)
    return sampling.draw(tenant=acme, population="decisions", by="user:1", precision=0.2, seed="ab" * 32)


@pytest.fixture
def votes(acme, policy):
    return [judged(make_memory(acme, subject=f"delivery day {n}"), policy, still_true=0.5) for n in range(6)]


def test_an_audit_item_shows_its_evidence_not_what_the_automation_did_until_the_answer_is_in(
    client, labeler, sample
):
    client.force_login(labeler)
    page = client.get("/t/acme/labels/?kind=audit")
    body = page.content.decode()
    key = shown(page)
    item = sample.drawn.get(pk=int(key[1:]))
    assert key.startswith("a") and "Is this memory true, given its evidence?" in body
    assert escape(item.memory.content) in body and item.memory.source_event.text in body
    assert "contradicted" not in body.lower() and "data-policy-said" not in body  # blind

    answered = client.post(
        "/t/acme/labels/record/", {"item": key, "outcome": "true", "kind": "audit"}, **HTMX
    )

    body = answered.content.decode()
    assert answered.status_code == 200 and "<html" not in body
    assert "The automation had <strong data-policy-said>contradicted it</strong>" in body
    assert "an error: counted in the estimate" in body  # a true memory the policy killed
    assert shown(answered) != key
    assert AuditLabel.objects.get().outcome == "true"


def test_the_verdict_stream_hands_out_audit_items_at_the_plans_share(client, labeler, acme, sample, votes):
    schedule.set_plan(acme, by="user:1", every_days=1, precision=0.03, confidence=0.95, budget=400, share=0.5)
    client.force_login(labeler)
    keys = []
    page = client.get("/t/acme/labels/")
    for _ in range(8):
        key = keys.append(shown(page)) or keys[-1]
        outcome = "true" if key[0] == "a" else "confirmed"
        page = client.post(
            "/t/acme/labels/record/", {"item": key, "outcome": outcome, "kind": "verdict"}, **HTMX
        )

    kinds = "".join(key[0] for key in keys)
    assert kinds.count("a") == 4 and kinds.count("v") == 4  # half and half, taking turns
    assert "aa" not in kinds[:7] and "vv" not in kinds[:7]
    assert AuditLabel.objects.count() == 4 and Label.objects.count() == 4


def test_a_share_of_zero_hands_out_no_audit_items_beside_the_verdicts(client, labeler, acme, sample, votes):
    schedule.set_plan(acme, by="user:1", every_days=1, precision=0.03, confidence=0.95, budget=400, share=0)
    client.force_login(labeler)
    assert shown(client.get("/t/acme/labels/")).startswith("v")
    assert shown(client.get("/t/acme/labels/?kind=audit")).startswith("a")  # its own tab still has them


def test_when_the_verdicts_are_all_labeled_the_audit_items_follow(client, labeler, sample):
    client.force_login(labeler)  # no votes at all: the default share would give a verdict first
    assert shown(client.get("/t/acme/labels/")).startswith("a")


def test_skip_moves_on_and_undo_withdraws_the_audit_label_and_brings_the_item_back(client, labeler, sample):
    client.force_login(labeler)
    first = shown(client.get("/t/acme/labels/?kind=audit"))
    second = shown(client.post("/t/acme/labels/skip/", {"item": first, "kind": "audit"}, **HTMX))
    assert second != first
    client.post("/t/acme/labels/record/", {"item": second, "outcome": "false", "kind": "audit"}, **HTMX)

    undone = client.post("/t/acme/labels/undo/", {"kind": "audit"}, **HTMX)

    assert shown(undone) == second and "withdrawn" in undone.content.decode()
    assert AuditLabel.objects.get().withdrawn_at is not None
    assert stream.waiting(sample.tenant).filter(pk=int(second[1:])).exists()


@pytest.mark.parametrize(
    ("posted", "message"),
    [
        ({"outcome": "maybe"}, "an audit label is one of true, false, got &#x27;maybe&#x27;"),
        ({"outcome": "true", "note": "x" * 501}, "the note is"),
    ],
)
def test_a_bad_audit_label_is_refused_by_name_and_writes_nothing(client, labeler, sample, posted, message):
    client.force_login(labeler)
    key = f"a{sample.drawn.first().pk}"
    response = client.post("/t/acme/labels/record/", {"item": key, "kind": "audit", **posted})
    assert response.status_code == 302 and not AuditLabel.objects.exists()
    assert message in client.get(response["Location"]).content.decode()


def test_an_audit_item_labeled_twice_by_one_person_is_refused(client, labeler, sample):
    client.force_login(labeler)
    key = f"a{sample.drawn.first().pk}"
    client.post("/t/acme/labels/record/", {"item": key, "outcome": "true", "kind": "audit"})
    again = client.post("/t/acme/labels/record/", {"item": key, "outcome": "false", "kind": "audit"})
    assert "you have already labeled item" in client.get(again["Location"]).content.decode()
    assert AuditLabel.objects.get().outcome == "true"


def test_another_tenants_audit_item_cannot_be_labeled_here(client, globex_lead, sample):
    client.force_login(globex_lead)
    key = f"a{sample.drawn.first().pk}"
    response = client.post("/t/globex/labels/record/", {"item": key, "outcome": "true", "kind": "audit"})
    assert f"no audit item {key[1:]} to label here" in client.get(response["Location"]).content.decode()
    assert not AuditLabel.objects.exists()


def test_an_auditor_cannot_label_audit_items(client, auditor, sample):
    client.force_login(auditor)
    key = f"a{sample.drawn.first().pk}"
    assert client.post("/t/acme/labels/record/", {"item": key, "outcome": "true"}).status_code == 403


def test_labelers_at_once_are_spread_over_the_audit_items(client, acme, labeler, sample):
    """Each labeler takes the front item their id hashes lowest with, so people labeling at once
    rarely answer the same item. Eight labelers over four items: all eight on one item would take
    a chance of 4 in 65,536 (two could share one by a chance of one in four, which is why this
    is not two labelers: user ids differ from run to run on PostgreSQL)."""
    from tests.factories import make_user

    people = [labeler, *(make_user(f"acme-labeler-{n}", acme, "labeler") for n in range(2, 9))]
    seen = set()
    for person in people:
        client.force_login(person)
        seen.add(shown(client.get("/t/acme/labels/?kind=audit")))
    assert len(seen) >= 2 and len(seen) <= 4


def test_skipping_the_last_audit_item_gives_back_the_verdicts(client, acme, labeler, votes):
    memory = make_memory(acme, subject="one")
    transition(obj=memory, action="contradict", actor=Actor.policy("v1"), reason="x", seen_version=1)
    one = sampling.draw(tenant=acme, population="decisions", by="user:1", precision=0.2)
    assert one.items == 1
    client.force_login(labeler)
    first = shown(client.get("/t/acme/labels/"))
    assert first.startswith("a")  # no labels yet: the share asks for an audit item

    after = client.post("/t/acme/labels/skip/", {"item": first, "kind": "verdict"}, **HTMX)

    assert shown(after).startswith("v")  # not "nothing left"
    assert shown(client.get("/t/acme/labels/")).startswith("v")


def test_a_crafted_audit_key_is_read_by_params_not_a_500(client, labeler, sample):
    client.force_login(labeler)
    response = client.post("/t/acme/labels/record/", {"item": "a²", "outcome": "true", "kind": "audit"})
    assert response.status_code == 302 and not AuditLabel.objects.exists()


def test_progress_counts_the_newest_samples_not_every_item_ever_drawn(client, acme, labeler, sample):
    for _ in range(3):
        make_memory(acme, source="email")
    unreviewed = sampling.draw(tenant=acme, population="unreviewed", by="user:1", precision=0.2)
    again = sampling.draw(tenant=acme, population="decisions", by="user:1", precision=0.2, seed="cd" * 32)
    newest = again.items + unreviewed.items
    older = sample.drawn.order_by("rank").first()  # labeled, but of a sample the newest replaced
    stream.record(acme, labeler, older.pk, outcome="true")
    stream.record(acme, labeler, again.drawn.order_by("rank").first().pk, outcome="false")
    client.force_login(labeler)

    body = client.get("/t/acme/labels/?kind=audit").content.decode()

    assert f"<dt>Newest samples labeled</dt><dd>1 of {newest}</dd>" in body
    assert "<dd data-mine>2</dd>" in body
