"""Blind labeling that holds (issue 14, item 7): a calibration labeler learns what the policy,
Jev and the other labelers made of an item only once their own label on it is in, on every page
the app serves, not just the labeling stream.

The walk is derived from the URLconf, so a page added later is walked too: every URL, its
<slug> and <pk> filled with real objects of the tenant. The item's hidden judgment is then
changed (another disposition, other votes, another labeler's other answer, another status for
its memory, a reviewer's decision) and every page the labeler opens must read exactly as before."""

import re

import pytest
from django.test import Client
from django.urls import URLResolver, get_resolver

from memory_review.agents import webhooks
from memory_review.agents.models import WebhookEndpoint
from memory_review.assessments.models import PromotionCandidate, Verdict
from memory_review.assessments.promotion import candidate_decide
from memory_review.calibration import adoption, labeling
from memory_review.calibration.labeling import CANDIDATE, VERDICT, ItemRef
from memory_review.calibration.models import Label
from memory_review.compliance import dual_control
from memory_review.jobfiles.models import JobFile
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.tenancy.models import Role
from memory_review.tenancy.tokens import token_create
from memory_review.workflow import assignment
from tests.factories import judged, make_memory, make_user
from tests.review.test_promotions import candidate

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
# What a labeler's GET of each page answers (403: the page explains that labelers work blind, or
# their role has no business there; 405: a form's target; 401: the agents' API, token only; 302:
# Django's admin, for staff). A page added to the URLconf fails here until someone decides.
LABELER_SEES = {
    "home": 302, "tenant-home": 200, "login": 200, "logout": 405, "healthz": 200, "readyz": 200,
    "metrics": 403, "api-openapi": 200, "api-events": 405, "api-events-batch": 405, "api-memories": 401,
    "api-candidates": 405,
    "api-assessment": 401, "api-changes": 401, "api-receipts": 405, "api-webhooks": 401, "api-webhook": 401,
    "api-webhook-redeliver": 405,
    "review-queue": 403, "review-changes": 403, "memory-list": 403, "bulk-preview": 405, "bulk-apply": 405,
    "review-flow": 403, "flow-decide": 405, "flow-undo": 405,
    "memory-detail": 200, "memory-act": 405, "memory-rewrite": 405, "claim-take": 405,
    "claim-renew": 405, "claim-release": 405, "claim-reassign": 405, "memory-reassess": 405,
    "claim-ask": 405, "claim-take-over": 405, "memory-assign": 405,
    "review-team": 403, "rule-new": 405, "rule-remove": 405, "review-target": 405,
    "promotion-list": 403, "disagreements": 403, "promotion-detail": 200, "promotion-decide": 405,
    "audit-trail": 403, "audit-verify": 405, "audit-verification": 403, "audit-export-csv": 403,
    "audit-export-jsonl": 403,
    "memory-lineage": 403, "memory-responses-export": 403,
    "export-list": 403, "export-detail": 403, "export-download": 403,
    "erasure-list": 403, "erasure-request": 405, "request-confirm": 405, "request-cancel": 405,
    "token-list": 403, "token-new": 405, "token-revoke": 405,
    "webhook-list": 403, "webhook-new": 405, "webhook-detail": 403, "webhook-state": 405,
    "webhook-redeliver": 405,
    "member-list": 403, "member-rule": 405, "member-change": 405,
    "assessment-list": 403, "assessment-detail": 403, "assessment-retry": 405,
    "labels": 200, "label-record": 405, "label-skip": 405, "label-undo": 405, "label-agreement": 200,
    "label-adjudicate": 405,
    "calibration": 200, "replay-set-export": 403, "replay-set-import": 405, "policy-compare": 403,
    "policy-propose": 405, "policy-list": 403, "policy-adopt": 405, "policy-decline": 405,
    "policy-redecide": 405,
    "memory-health": 403, "memory-health-plan": 405, "memory-health-draw": 405, "memory-health-trust": 405,
    "memory-health-rule": 405, "memory-health-rule-withdraw": 405,
}  # fmt: skip
# Query strings and htmx regions the pages know, so a partial is walked as well as its page.
VARIANTS = [
    ("", {}),
    ("?show=all&kind=candidate&unrelated=show&hops=2&status=contradicted", {}),
    ("?part=verdicts", HTMX),
    ("?part=asof&as_of=2031-01-01T00:00", HTMX),
]
# What changes from one request to the next whatever the data: CSRF tokens, a sweep's seconds.
VOLATILE = [
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"'), "csrf"),
    (re.compile(r'"X-CSRFToken": "[^"]+"'), "csrf"),
    (re.compile(r"\b[0-9]+(\.[0-9]+)? s\b"), "seconds"),
]

# The hidden judgment, as first stored and as changed: distinctive votes, so none of them can
# turn up on a page by chance.
FIRST = dict(
    disposition="contradicted", shadow_disposition="superseded", proposed_status="contradicted",
    bears=0.8713, still_true=0.1372, replaces=0.3146, partial=0.0619, hypothetical=0.0283, directive=0.0347,
)  # fmt: skip
CHANGED = dict(
    disposition="confirmed", shadow_disposition="uncertain", proposed_status="active",
    bears=0.9251, still_true=0.8861, replaces=0.0418, partial=0.0527, hypothetical=0.0194, directive=0.0236,
)  # fmt: skip
FIRST_CANDIDATE = dict(supported=0.9517, scope_fits=0.9283, conflict=0.0361, policy_decision="promote")
CHANGED_CANDIDATE = dict(supported=0.2174, scope_fits=0.6039, conflict=0.4412, policy_decision="review")
SECRET_VOTES = [
    str(value) for values in (FIRST, CHANGED, FIRST_CANDIDATE, CHANGED_CANDIDATE) for value in values.values()
    if isinstance(value, float)
]  # fmt: skip
OTHERS_NOTE = "only-the-other-labeler-wrote-this"


@pytest.fixture
def world(acme, policy, labeler, lead):
    """An item the labeler has not labeled (a verdict, and a candidate), which another labeler
    has; and one the labeler labeled, so their calibration and agreement pages have numbers."""
    other = make_user("acme-labeler-2", acme, Role.LABELER)
    memory = make_memory(acme, subject="refund window", content="Refunds are accepted for 30 days.")
    hidden = judged(memory, policy)
    Verdict.objects.filter(pk=hidden.pk).update(**FIRST)
    Memory.objects.filter(pk=memory.pk).update(p_true=FIRST["still_true"])
    transition(
        obj=memory, action="contradict", actor=Actor.policy(policy.label), seen_version=memory.row_version,
        reason=f"contradicted by policy:{policy.label}: still_true {FIRST['still_true']}", verdict=hidden,
    )  # fmt: skip
    proposed = candidate(acme, policy, subject="invoice addressee", votes=(0.5, 0.5, 0.5))
    PromotionCandidate.objects.filter(pk=proposed.pk).update(**FIRST_CANDIDATE)
    labeling.record(acme, other, ItemRef(VERDICT, hidden.pk), outcome="superseded", note=OTHERS_NOTE)
    labeling.record(acme, other, ItemRef(CANDIDATE, proposed.pk), outcome="conflict", note=OTHERS_NOTE)

    mine = judged(make_memory(acme, subject="delivery day"), policy, disposition="confirmed", still_true=0.9)
    for person in (labeler, other):
        labeling.record(acme, person, ItemRef(VERDICT, mine.pk), outcome="confirmed")
    # What fills each <pk>, by the part of the path before it.
    fills = {
        "memories": memory, "promotions": proposed, "assessments": hidden.assessment,
        "requests": dual_control.request_erasure(tenant=acme, user_id="c9", reason="asked", by=lead),
        "tokens": token_create(tenant=acme, name="support-bot")[0],
        "policies": adoption.propose(
            acme, lead, thresholds=labeling.active_policy(acme)[1], mode="shadow", reason="try", evidence={}
        ),
        "rules": assignment.rule_create(tenant=acme, to=lead, by=lead, subject="delivery"),
        "webhooks": WebhookEndpoint.objects.create(
            tenant=acme, url="https://hooks.example/in", secret=webhooks.new_secret(), created_by="user:1"
        ),
        "exports": JobFile.objects.create(
            tenant=acme, kind="replay-set.jsonl", filename="r.jsonl", requested_by="user:1"
        ),
    }  # fmt: skip
    webhooks.fan_out(acme.pk, send=False)
    fills["deliveries"] = fills["webhooks"].deliveries.order_by("pk").first()
    return {"other": other, "memory": memory, "verdict": hidden, "candidate": proposed, "fills": fills}


def change_what_is_hidden(world, policy, lead):
    """Another judgment of the same items: other votes and decisions, the other labeler's other
    answers, the memory moved on, and a reviewer's decision on the candidate."""
    Verdict.objects.filter(pk=world["verdict"].pk).update(**CHANGED)
    memory = Memory.objects.get(pk=world["memory"].pk)
    transition(
        obj=memory, action="restore", actor=Actor.user(lead), seen_version=memory.row_version,
        reason=f"still_true {CHANGED['still_true']} says it holds",
    )  # fmt: skip
    Memory.objects.filter(pk=memory.pk).update(p_true=CHANGED["still_true"])
    Label.objects.filter(labeler=world["other"], verdict=world["verdict"]).update(outcome="confirmed")
    Label.objects.filter(labeler=world["other"], candidate=world["candidate"]).update(outcome="promote")
    PromotionCandidate.objects.filter(pk=world["candidate"].pk).update(**CHANGED_CANDIDATE)
    candidate_decide(
        candidate=PromotionCandidate.objects.get(pk=world["candidate"].pk), action="reject",
        actor=Actor.user(lead), reason="out of scope", seen_version=1,
    )  # fmt: skip


def routes(resolver=None, prefix=""):
    """(route, name) of every URL the project serves, from the URLconf."""
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from routes(entry, route)
        else:
            yield route, entry.name


def pages(world, tenant):
    """(name, path) of every URL with its parameters filled by the world's objects. Django's
    admin is for staff: a labeler is sent to its login, which its index shows."""
    pk_of = world["fills"]
    for route, name in routes():
        if route.startswith("admin/"):
            if route == "admin/":
                yield "admin", "/admin/"
            continue
        path = route.replace("<slug:slug>", tenant.slug)
        if "<id:pk>" in path:
            segment = path.split("<id:pk>")[0].rstrip("/").rsplit("/", 1)[-1]
            assert segment in pk_of, f"teach the walk which object fills {route}"
            path = path.replace("<id:pk>", str(pk_of[segment].pk))
        if "<id:delivery>" in path:
            path = path.replace("<id:delivery>", str(pk_of["deliveries"].pk))
        assert "<" not in path, f"teach the walk how to fill {route}"
        yield name, "/" + path


def body(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    text = raw.decode()
    for pattern, stand_in in VOLATILE:
        text = pattern.sub(stand_in, text)
    return text


def walk(client, world, tenant) -> dict[str, tuple[int, str]]:
    seen = {}
    for name, path in pages(world, tenant):
        for query, headers in VARIANTS:
            response = client.get(path + query, **headers)
            seen[path + query + str(headers)] = (name, response.status_code, body(response))
    return seen


@pytest.fixture(autouse=True)
def jev_answers(monkeypatch):
    """The readiness probe asks Jev over the network: here it answers."""
    from memory_review.health import views

    monkeypatch.setattr(views, "_jev_cached", lambda: None)


@pytest.fixture
def as_labeler(labeler):
    client = Client(REMOTE_ADDR="203.0.113.7")  # from their desk, not from this host
    client.force_login(labeler)
    return client


def test_every_page_answers_a_labeler_as_decided_and_none_fails(as_labeler, world, acme):
    answered = {(name, status) for name, status, _ in walk(as_labeler, world, acme).values()}
    admin = {status for name, status in answered if name == "admin"}
    assert admin == {302}
    statuses = {name: status for name, status in answered if name != "admin"}
    assert statuses.keys() == LABELER_SEES.keys(), "decide what a labeler sees of each new page"
    assert statuses == LABELER_SEES


def test_no_page_a_labeler_opens_depends_on_a_judgment_they_have_not_labeled(
    as_labeler, world, acme, policy, lead
):
    before = walk(as_labeler, world, acme)
    change_what_is_hidden(world, policy, lead)
    after = walk(as_labeler, world, acme)

    changed = [url for url in before if before[url] != after[url]]
    assert changed == []
    shown = "".join(text for _, _, text in after.values())
    assert [vote for vote in SECRET_VOTES if vote in shown] == []
    assert OTHERS_NOTE not in shown


def test_a_refused_page_says_labelers_work_blind_and_where_to_look_instead(as_labeler, world):
    refused = as_labeler.get("/t/acme/review/")
    text = refused.content.decode()
    assert refused.status_code == 403 and "Labelers work blind" in text
    assert "why the policy sent each memory to review" in text
    assert 'href="/t/acme/labels/"' in text and "shows each item's evidence" in text


def test_a_memory_with_no_vote_to_label_is_no_items_evidence_and_stays_closed(as_labeler, world, acme):
    rewritten = make_memory(acme, subject="refund window", content="Refunds are accepted for 14 days.")
    refused = as_labeler.get(f"/t/acme/memories/{rewritten.pk}/")
    assert refused.status_code == 403 and "no vote on this memory can be labeled" in refused.content.decode()


def test_every_link_on_a_labelers_pages_opens(as_labeler, world, acme):
    opened = {path for name, path in pages(world, acme) if LABELER_SEES.get(name) == 200}
    links = set()
    for path in opened:
        text = as_labeler.get(path).content.decode()
        found = re.findall(r'(?:href|hx-get|data-url|data-chart-url)="([/?][^"]*)"', text)
        links |= {(path + link if link.startswith("?") else link).replace("&amp;", "&") for link in found}
    links = {link for link in links if not link.startswith("/static/")}
    assert links
    broken = {link: as_labeler.get(link, follow=True).status_code for link in links}
    assert {link: status for link, status in broken.items() if status != 200} == {}


def test_a_labelers_posts_change_nothing_they_may_not_and_tell_nothing(as_labeler, world, acme):
    for name, path in pages(world, acme):
        if LABELER_SEES.get(name) == 405 and name != "logout":
            response = as_labeler.post(path, follow=True)
            text = body(response)
            assert response.status_code < 500, path
            assert [vote for vote in SECRET_VOTES if vote in text] == [] and "superseded</strong>" not in text
    assert Memory.objects.get(pk=world["memory"].pk).status == "contradicted"
    assert PromotionCandidate.objects.get(pk=world["candidate"].pk).reviewer_decision is None


def test_once_labeled_the_memory_and_candidate_pages_reveal_what_the_stream_reveals(as_labeler, world):
    verdict, proposed = world["verdict"], world["candidate"]
    as_labeler.post("/t/acme/labels/record/", {"item": f"v{verdict.pk}", "outcome": "superseded"})
    as_labeler.post("/t/acme/labels/record/", {"item": f"c{proposed.pk}", "outcome": "promote"})

    page = as_labeler.get(f"/t/acme/memories/{world['memory'].pk}/").content.decode()
    assert "data-policy-said>Contradicted (no longer true)<" in page
    assert "acme-labeler-2 said <strong>Superseded (replaced by a newer one)</strong>" in page
    assert "still_true 0.14" in page
    assert "Refunds are accepted for 30 days." in page and "Status history" not in page

    page = as_labeler.get(f"/t/acme/promotions/{proposed.pk}/").content.decode()
    assert "data-policy-said>Promote<" in page
    assert "acme-labeler-2 said <strong>Review: it conflicts with a memory</strong>" in page
    assert "supported 0.95" in page


def test_a_labelers_numbers_count_only_what_they_labeled(as_labeler, world):
    assert re.search(r"data-gold>1<", as_labeler.get("/t/acme/calibration/").content.decode())
    as_labeler.post("/t/acme/labels/record/", {"item": f"v{world['verdict'].pk}", "outcome": "superseded"})
    calibration = as_labeler.get("/t/acme/calibration/").content.decode()
    assert re.search(r"data-gold>2<", calibration) and "Counted over the items <strong>you" in calibration
    agreement = as_labeler.get("/t/acme/labels/agreement/").content.decode()
    assert "Items with two labels or more</dt><dd>2<" in agreement


def test_reviewers_and_leads_still_see_everything(client, world, lead):
    client.force_login(lead)
    page = client.get(f"/t/acme/memories/{world['memory'].pk}/").content.decode()
    assert "Status history" in page and f'id="verdict-{world["verdict"].pk}"' in page
    assert "still true 0.1372" in page  # the policy's move, quoting the vote
    assert client.get("/t/acme/review/").status_code == 200
    calibration = client.get("/t/acme/calibration/").content.decode()
    assert re.search(r"data-gold>2<", calibration) and "Counted over the items" not in calibration
