"""The labeling stream, the calibration page, replay sets in and out, and adopting a policy with
its evidence, through the real views (issue 9)."""

import re
import xml.etree.ElementTree as ET

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.html import escape

from memory_review.assessments.models import PolicyVersion
from memory_review.calibration import evidence, labeling, reliability
from memory_review.calibration.labeling import ItemRef
from memory_review.calibration.models import Label, PolicyProposal, ReplaySet
from memory_review.tenancy.models import Role
from tests.factories import judged, make_memory, make_user

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def admin(acme):
    return make_user("acme-admin", acme, Role.ADMIN)


@pytest.fixture
def votes(acme, policy):
    """Four judged memories, one per kind of outcome, as the pipeline records them."""
    made = []
    for subject, still_true, replaces, disposition in [
        ("delivery day", 0.92, 0.1, "confirmed"),
        ("invoice address", 0.2, 0.8, "superseded"),
        ("refund limit", 0.3, 0.1, "contradicted"),
        ("contact channel", 0.5, 0.1, "uncertain"),
    ]:
        memory = make_memory(acme, subject=subject)
        made.append(judged(memory, policy, still_true=still_true, replaces=replaces, disposition=disposition))
    return made


def shown_item(response) -> str:
    return re.search(r'data-item="([vc]\d+)"', response.content.decode()).group(1)


def test_the_stream_is_blind_until_the_label_is_in_then_shows_the_policy_and_others(
    client, votes, labeler, lead
):
    labeling.record(votes[0].tenant, lead, ItemRef("verdict", votes[3].pk), outcome="uncertain")
    client.force_login(labeler)
    page = client.get("/t/acme/labels/")
    assert page.status_code == 200
    key = shown_item(page)
    assert key == f"v{votes[3].pk}"  # a second opinion first
    body = page.content.decode()
    assert "data-policy-said" not in body and "still_true 0.50" not in body and "Maria" not in body

    answered = client.post("/t/acme/labels/record/", {"item": key, "outcome": "confirmed"}, **HTMX)
    assert answered.status_code == 200
    body = answered.content.decode()
    assert 'id="label-panel"' in body and "<html" not in body  # the panel only, swapped in place
    # In the buttons' words, never the stored codes (the button said "Still true").
    assert "you said <strong>Still true</strong>" in body and "said <strong>confirmed" not in body
    cant_tell = escape("Can't tell: a person should look")
    assert f"The policy said <strong data-policy-said>{cant_tell}</strong>" in body
    assert f"acme-lead said <strong>{cant_tell}</strong>" in body
    assert shown_item(answered) != key
    assert Label.objects.filter(labeler=labeler, verdict=votes[3], outcome="confirmed").exists()


def test_a_plain_form_posts_and_redirects_and_a_bad_label_writes_nothing(client, votes, labeler):
    client.force_login(labeler)
    key = f"v{votes[0].pk}"
    response = client.post("/t/acme/labels/record/", {"item": key, "outcome": "maybe"})
    assert response.status_code == 302 and not Label.objects.exists()
    page = client.get(response["Location"])
    assert "Nothing was recorded: outcome &#x27;maybe&#x27; is not one of" in page.content.decode()
    response = client.post(
        "/t/acme/labels/record/",
        {"item": key, "outcome": "confirmed", "alternatives": ["uncertain"], "note": "ok"},
    )
    assert response.status_code == 302
    (label,) = Label.objects.all()
    assert (label.outcome, label.alternatives, label.note) == ("confirmed", ["uncertain"], "ok")


def test_skip_moves_on_and_undo_brings_the_item_back(client, votes, labeler):
    client.force_login(labeler)
    first = shown_item(client.get("/t/acme/labels/"))
    after_skip = client.post("/t/acme/labels/skip/", {"item": first}, **HTMX)
    assert shown_item(after_skip) != first
    second = shown_item(after_skip)
    client.post("/t/acme/labels/record/", {"item": second, "outcome": "confirmed"}, **HTMX)
    undone = client.post("/t/acme/labels/undo/", {}, **HTMX)
    assert shown_item(undone) == second
    assert "withdrawn" in undone.content.decode()
    assert Label.objects.get().withdrawn_at is not None


def test_an_auditor_reads_calibration_but_cannot_label_and_another_tenant_is_a_404(
    client, votes, auditor, globex
):
    client.force_login(auditor)
    assert client.get("/t/acme/calibration/").status_code == 200
    assert client.get("/t/acme/labels/").status_code == 403
    assert (
        client.post("/t/acme/labels/record/", {"item": f"v{votes[0].pk}", "outcome": "confirmed"}).status_code
        == 403
    )
    assert not Label.objects.exists()
    assert client.get("/t/globex/labels/").status_code == 404


def test_only_a_lead_rules_on_a_disagreement(client, votes, labeler, reviewer, lead):
    tenant, item = votes[0].tenant, ItemRef("verdict", votes[1].pk)
    labeling.record(tenant, labeler, item, outcome="superseded")
    labeling.record(tenant, reviewer, item, outcome="contradicted")
    client.force_login(labeler)
    page = client.get("/t/acme/labels/agreement/")
    assert "Awaiting a ruling: 1" in page.content.decode()
    assert (
        client.post("/t/acme/labels/adjudicate/", {"item": item.key, "outcome": "superseded"}).status_code
        == 403
    )
    client.force_login(lead)
    client.post("/t/acme/labels/adjudicate/", {"item": item.key, "outcome": "superseded", "note": "re-read"})
    ruling = Label.objects.get(adjudicated=True)
    assert (ruling.labeler, ruling.outcome) == (lead, "superseded")
    assert "Awaiting a ruling: 0" in client.get("/t/acme/labels/agreement/").content.decode()


def label_all(votes, labeler):
    for verdict, outcome in zip(
        votes, ["confirmed", "contradicted", "contradicted", "confirmed"], strict=True
    ):
        labeling.record(verdict.tenant, labeler, ItemRef("verdict", verdict.pk), outcome=outcome)


def test_the_calibration_page_shows_the_active_policy_reliability_and_the_sweep(client, votes, labeler):
    label_all(votes, labeler)
    client.force_login(labeler)
    body = client.get("/t/acme/calibration/").content.decode()
    assert re.search(r"data-gold>4<", body)
    # The superseded vote on a memory labeled contradicted is no false invalidation; the uncertain
    # one labeled confirmed is a miss; strict 2 of 4 (confirmed, contradicted).
    assert re.search(r"Strict accuracy</dt><dd>50% \(2\)", body)
    assert re.search(r"data-false-invalidations>0<", body)
    assert re.search(r"A grid of <strong>\d{4,}</strong> policies", body)
    for question in ("bears", "still_true", "replaces", "partial", "hypothetical", "directive", "supported"):
        assert f'data-question="{question}"' in body
    assert "plotly" not in body and "charts.js" not in body  # the charts come drawn, as SVG
    assert len(charts_on(body)) == 6 + 6  # the verdict questions' diagrams and six curves


def charts_on(body: str) -> dict[str, ET.Element]:
    """Each chart drawn on the page (an <svg role="img">), by the id of the table that describes it."""
    found = {}
    for svg in re.findall(r'<svg[^>]*role="img".*?</svg>', body, re.DOTALL):
        chart = ET.fromstring(svg)
        found[chart.get("aria-describedby")] = chart
    return found


def table_rows(body: str, table_id: str) -> list[list[str]]:
    table = re.search(rf'<table[^>]*id="{re.escape(table_id)}".*?</table>', body, re.DOTALL).group(0)
    body_rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.DOTALL)
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in body_rows]


def scale(chart: ET.Element, axis: str):
    """The chart's own axis `axis` ("x", "y" or "right") as a function from a position to the
    value there, from its first and last tick: how a reader reads a mark off the chart."""
    ticks = []
    for tick in chart.iter("g"):
        if tick.get("class") == f"tick {axis}":
            x, y = map(float, re.search(r"translate\(([-\d.]+) ([-\d.]+)\)", tick.get("transform")).groups())
            ticks.append((x if axis == "x" else y, float(tick.find("text").text)))
    (p0, v0), (p1, v1) = ticks[0], ticks[-1]
    return lambda position: v0 + (position - p0) * (v1 - v0) / (p1 - p0)


def points(chart: ET.Element, series: str) -> list[tuple[float, float]]:
    """A series' points, in the data's units."""
    x, y = scale(chart, "x"), scale(chart, "y")
    group = next(g for g in chart.iter("g") if g.get("data-series") == series)
    marks = [mark for mark in group.iter("g") if mark.get("class") == "point"]
    at = [re.search(r"translate\(([-\d.]+) ([-\d.]+)\)", mark.get("transform")).groups() for mark in marks]
    return [(x(float(px)), y(float(py))) for px, py in at]


def test_each_chart_draws_the_numbers_of_the_table_beside_it(client, votes, labeler):
    """Read back through its own axes, each reliability diagram has a point at each filled bin's
    (mean said, observed) and a bar of its n; each curve a point per row of its table at the
    row's count over the labeled cases; every series named in the chart's legend."""
    label_all(votes, labeler)
    client.force_login(labeler)
    body = client.get("/t/acme/calibration/").content.decode()
    charts = charts_on(body)
    diagrams = {key: chart for key, chart in charts.items() if key.startswith("reliability-")}
    assert set(diagrams) == {f"reliability-{q}" for q in reliability.VERDICT_QUESTIONS}  # no candidates
    drawn_bins = 0
    for key, chart in diagrams.items():
        filled = [
            (float(said), float(seen), int(n)) for _, n, said, seen in table_rows(body, key) if n != "0"
        ]
        observed = points(chart, "observed")
        assert len(observed) == len(filled), key
        for (x, y), (said, seen, _) in zip(observed, filled, strict=True):
            assert (x, y) == (pytest.approx(said, abs=0.006), pytest.approx(seen, abs=0.006)), key
        votes_at = scale(chart, "right")
        heights = [votes_at(float(bar.get("y"))) for bar in chart.iter("rect") if bar.get("class") == "bar"]
        assert heights == [pytest.approx(n, abs=0.05) for *_, n in filled], key
        drawn_bins += len(filled)
    assert drawn_bins >= 6  # every question has a filled bin

    curves = {key: chart for key, chart in charts.items() if key.startswith("curve-")}
    assert set(curves) == {f"curve-{name}" for name in evidence.CURVED}
    for key, chart in curves.items():
        rows = table_rows(body, key)
        assert rows, key
        for column, series in enumerate(("strict", "lenient", "false invalidations", "review rate"), start=1):
            drawn = points(chart, series)
            expected = [(float(row[0]), int(row[column]) / 4) for row in rows]  # 4 labeled cases
            assert drawn == [(pytest.approx(x, abs=0.004), pytest.approx(y, abs=0.004)) for x, y in expected]
    legends = dict(
        re.findall(r'aria-describedby="([^"]+)".*?</svg>\s*<ul class="legend" data-legend>(.*?)</ul>', body)
    )
    assert set(legends) == set(charts)
    _, active = labeling.active_policy(votes[0].tenant)
    for name in evidence.CURVED:
        named = ["strict", "lenient", "false invalidations", "review rate"]
        named.append(f"active policy ({getattr(active, name):g})")
        assert re.findall(r"</svg> ([^<]+)</li>", legends[f"curve-{name}"]) == named
    for key in diagrams:
        assert re.findall(r"</svg> ([^<]+)</li>", legends[key]) == [
            "observed share",
            "calibrated",
            "votes in bin",
        ]


def test_no_chart_holds_anything_focusable_and_every_header_cell_has_words(client, votes, labeler, lead):
    """axe-core 4's nested-interactive and empty-table-header: a role=img chart is one image to a
    screen reader, so nothing inside it may take focus; a header cell with no words names nothing."""
    label_all(votes, labeler)
    client.force_login(lead)
    for path in ("/t/acme/calibration/", "/t/acme/calibration/compare/?confirm_min=0.7"):
        response = client.get(path)
        assert response.status_code == 200, path
        body = response.content.decode()
        for svg in re.findall(r'<svg[^>]*role="img".*?</svg>', body, re.DOTALL):
            assert not re.search(r"<(a|button|input|select|textarea)\b|tabindex", svg), path
        assert not re.findall(r"<th[^>]*>\s*</th>", body), path


def test_every_chart_is_described_by_the_table_of_its_numbers(client, votes, labeler, acme):
    """Issue 15 item 7: a chart's text alternative is the numbers table beside it, linked by
    aria-describedby, on the calibration page and the memory page (its vote chart, and the drawing
    of its links described by their list: a group of links, not an image, since it holds them)."""
    from memory_review.memories.models import MemoryLink
    from memory_review.memories.services import link_create

    label_all(votes, labeler)
    link_create(src=votes[1].memory, dst=votes[0].memory, kind="refines", origin=MemoryLink.Origin.EXPLICIT)
    client.force_login(labeler)
    pages = {"/t/acme/calibration/": client.get("/t/acme/calibration/").content.decode()}
    client.force_login(make_user("acme-lead-charts", acme, Role.LEAD))
    memory_page = f"/t/acme/memories/{votes[0].memory_id}/"
    pages[memory_page] = client.get(memory_page).content.decode()
    for path, body in pages.items():
        charts = re.findall(r'<(?:div|svg)[^>]*role="(?:img|group)"[^>]*>', body)
        assert charts, f"no chart on {path}"
        if path == memory_page:  # the vote chart and the drawing of its links
            assert len(charts) == 2 and 'class="graph"' in charts[1] and 'role="group"' in charts[1], charts
        for chart in charts:
            described = re.search(r'aria-describedby="([^"]+)"', chart)
            assert described, f"{path}: a chart with no aria-describedby: {chart[:120]}"
            target = re.search(rf'<(\w+)[^>]*\bid="{re.escape(described.group(1))}"', body)
            assert target, (path, described.group(1))
            assert target.group(1) in ("table", "figcaption", "p", "ul"), (path, described.group(1))


def test_a_replay_set_goes_out_and_a_bad_one_comes_in_with_nothing_kept(client, votes, labeler, lead):
    label_all(votes, labeler)
    client.force_login(lead)
    exported = b"".join(client.get("/t/acme/calibration/replay-set.jsonl").streaming_content)
    client.force_login(labeler)
    assert len(exported.splitlines()) == 4

    good = SimpleUploadedFile("outside.jsonl", exported, content_type="application/x-ndjson")
    response = client.post("/t/acme/calibration/import/", {"file": good})
    kept = ReplaySet.objects.get()
    assert kept.cases == 4 and response["Location"].endswith(f"?set={kept.pk}")
    assert "Scoring the imported replay set" in client.get(response["Location"]).content.decode()

    broken = exported + b'{"id": "x", "votes": {"bears": 2}, "expected": "confirmed"}\n'
    response = client.post("/t/acme/calibration/import/", {"file": SimpleUploadedFile("bad.jsonl", broken)})
    assert ReplaySet.objects.count() == 1
    page = response.content.decode()
    assert response.status_code == 400
    assert "Nothing was imported from bad.jsonl" in page and "bad.jsonl line 5" in page
    latin = SimpleUploadedFile("latin.jsonl", b"\xff\xfe")
    latin = client.post("/t/acme/calibration/import/", {"file": latin})
    assert latin.status_code == 400 and "latin.jsonl is not UTF-8 text" in latin.content.decode()
    assert ReplaySet.objects.count() == 1


def test_compare_propose_and_adopt_with_its_evidence(client, votes, labeler, lead, admin):
    label_all(votes, labeler)
    client.force_login(lead)
    bad = client.get("/t/acme/calibration/compare/", {"contradict_max": 0.7})
    assert bad.status_code == 400 and "must not exceed confirm_min" in bad.content.decode()
    # A wider confirm band: the uncertain 0.5 vote would now confirm its memory.
    page = client.get("/t/acme/calibration/compare/", {"confirm_min": 0.45, "contradict_max": 0.4})
    body = page.content.decode()
    assert "1 of 4 verdicts would be decided otherwise" in body
    assert f"/t/acme/memories/{votes[3].memory_id}/" in body

    client.force_login(labeler)
    assert client.post("/t/acme/calibration/propose/", {"confirm_min": 0.45}).status_code == 403
    client.force_login(lead)
    refused = client.post(
        "/t/acme/calibration/propose/", {"confirm_min": 0.45, "mode": "active", "reason": ""}
    )
    assert refused["Location"].endswith("?confirm_min=0.45") and not PolicyProposal.objects.exists()
    client.force_login(lead)
    client.post(
        "/t/acme/calibration/propose/",
        {
            "confirm_min": 0.45,
            "contradict_max": 0.4,
            "mode": "active",
            "reason": "fewer reviews",
            "origin": "typed",
        },
    )
    proposal = PolicyProposal.objects.get()
    assert proposal.evidence["stored_votes"]["changed"] == 1
    assert proposal.evidence["labeled_set"]["candidate"]["strict"] == 3  # the 0.5 vote labeled confirmed
    assert proposal.evidence["changed_thresholds"] == {"confirm_min": [0.6, 0.45]}
    # The lead cannot adopt (admins adopt), and an admin cannot adopt what they proposed.
    assert client.post(f"/t/acme/policies/{proposal.pk}/adopt/").status_code == 403

    client.force_login(admin)
    client.post(f"/t/acme/policies/{proposal.pk}/adopt/", {"note": "labels agree"})
    active = PolicyVersion.objects.for_tenant(votes[0].tenant).active()
    assert (active.number, active.thresholds["confirm_min"]) == (2, 0.45)
    assert PolicyVersion.objects.get(number=1).mode == "retired"
    proposal.refresh_from_db()
    assert (proposal.outcome, proposal.decided_by, proposal.policy) == ("adopted", admin, active)
    assert active.proposal == proposal
    again = client.post(f"/t/acme/policies/{proposal.pk}/adopt/")
    assert "was adopted already" in client.get(again["Location"]).content.decode()


def test_an_admin_cannot_adopt_their_own_proposal_and_declining_needs_a_reason(client, votes, admin):
    from memory_review.calibration import adoption

    tenant = votes[0].tenant
    proposal = adoption.propose(
        tenant, admin, thresholds=labeling.active_policy(tenant)[1], mode="shadow", reason="try", evidence={}
    )
    with pytest.raises(adoption.AdoptionError, match="you proposed this one"):
        adoption.adopt(tenant, admin, proposal.pk)
    with pytest.raises(adoption.AdoptionError, match="needs a reason"):
        adoption.decline(tenant, admin, proposal.pk, note=" ")
    adoption.decline(tenant, admin, proposal.pk, note="not now")
    assert PolicyProposal.objects.get().outcome == "declined" and PolicyVersion.objects.count() == 1


def test_the_disagreements_page_sets_both_policies_against_the_labels(client, votes, labeler, lead):
    from memory_review.assessments.models import Verdict

    Verdict.objects.filter(pk__in=[v.pk for v in votes]).update(shadow_disposition="confirmed")
    label_all(votes, labeler)
    client.force_login(lead)
    body = client.get("/t/acme/promotions/disagreements/").content.decode()
    section = body[body.index('id="labels-title"') :]
    # Gold: confirmed, contradicted, contradicted, confirmed. Active: confirmed, superseded,
    # contradicted, uncertain (2 agree); the shadow said confirmed throughout (2 agree).
    assert section.count("(2 of 4)") == 2


def test_garbage_and_overlong_input_is_refused_by_name_and_writes_nothing(
    client, votes, labeler, lead, admin
):
    client.force_login(labeler)
    assert client.post("/t/acme/labels/record/", {"item": "v²", "outcome": "confirmed"}).status_code == 302
    assert client.post("/t/acme/labels/skip/", {"item": "v²"}, **HTMX).status_code == 400
    assert client.get("/t/acme/calibration/", {"set": "²"}).status_code == 400
    emoji_note = {"item": f"v{votes[0].pk}", "outcome": "confirmed", "note": "😀" * 300}  # 600 UTF-16 units
    answered = client.post("/t/acme/labels/record/", emoji_note, **HTMX)
    assert answered.status_code == 400 and "the note is 600 characters long as the database counts them" in (
        answered.content.decode()
    )
    assert not Label.objects.exists()

    from memory_review.calibration import adoption

    tenant = votes[0].tenant
    proposal = adoption.propose(
        tenant, lead, thresholds=labeling.active_policy(tenant)[1], mode="shadow", reason="try", evidence={}
    )
    client.force_login(admin)
    client.post(f"/t/acme/policies/{proposal.pk}/adopt/", {"note": "x" * 1001})
    assert PolicyProposal.objects.get().outcome is None and PolicyVersion.objects.count() == 1


def test_a_labeler_never_sees_others_answers_before_their_own(
    client, votes, labeler, reviewer, lead, auditor
):
    tenant, item = votes[0].tenant, ItemRef("verdict", votes[1].pk)
    labeling.record(tenant, lead, item, outcome="superseded")
    labeling.record(tenant, reviewer, item, outcome="contradicted")
    client.force_login(labeler)
    assert client.get("/t/acme/calibration/replay-set.jsonl").status_code == 403
    agreement = client.get("/t/acme/labels/agreement/").content.decode()
    # Counted over the items they labeled (tests/review/test_blind_labeling.py): none yet.
    assert "Awaiting a ruling: 0" in agreement and "superseded</strong>" not in agreement
    client.force_login(auditor)
    assert client.get("/t/acme/calibration/replay-set.jsonl").status_code == 200
    agreement = client.get("/t/acme/labels/agreement/").content.decode()
    assert (
        "Awaiting a ruling: 1" in agreement and "Superseded (replaced by a newer one)</strong>" in agreement
    )


def test_the_agreement_page_leaves_out_a_disputed_item_whose_evidence_was_erased(
    client, votes, labeler, reviewer, lead
):
    from memory_review.memories.models import Memory

    tenant, item = votes[0].tenant, ItemRef("verdict", votes[1].pk)
    labeling.record(tenant, labeler, item, outcome="superseded")
    labeling.record(tenant, reviewer, item, outcome="contradicted")
    Memory.objects.filter(pk=votes[1].memory_id).update(deleted_at="2026-01-01T00:00Z")
    client.force_login(lead)
    page = client.get("/t/acme/labels/agreement/")
    assert page.status_code == 200 and f'id="dispute-{item.key}"' not in page.content.decode()
