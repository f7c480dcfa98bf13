"""Promotion candidates on screen: the claim, its source, three votes and the policy's shadow
decision; a reviewer's decision; and where the policy and people disagree, with kappa."""

import pytest

from memory_review.assessments.models import Assessment, PromotionCandidate, Verdict
from memory_review.assessments.promotion import candidate_decide, candidate_propose, run_promotion
from memory_review.assessments.services import policy_set_shadow
from memory_review.lifecycle import Actor
from memory_review.memories.models import Memory
from memory_review.memories.services import content_hash, event_record
from tests.factories import judged, make_memory

pytestmark = pytest.mark.django_db


def candidate(
    tenant, policy, *, subject="invoice addressee", votes=(0.95, 0.95, 0.02), decision=None, by=None
):
    """A candidate whose votes are in (its assessment done), decided by `by` when `decision`."""
    event = event_record(tenant=tenant, source="email", text=f"Please note: {subject} changed.", user_id="c1")
    assessment = Assessment.objects.create(
        tenant=tenant, purpose="promotion", event=event, policy=policy, question_set_version="t", state="done"
    )
    supported, scope_fits, conflict = votes
    from memory_review.assessments.policy import decide_promotion

    made = PromotionCandidate.objects.create(
        tenant=tenant,
        kind="preference",
        subject=subject,
        claim=f"{subject}: the new value.",
        claim_hash=content_hash(subject),
        source_event=event,
        source_hash=event.text_hash,
        proposed_by="agent:billing-assistant",
        user_id="c1",
        assessment=assessment,
        supported=supported,
        scope_fits=scope_fits,
        conflict=conflict,
        policy_decision=decide_promotion(
            {"supported": supported, "scope_fits": scope_fits, "conflict": conflict}
        ),
    )
    if decision:
        candidate_decide(
            candidate=made, action=decision, actor=Actor.user(by), reason="checked", seen_version=1
        )
        made.refresh_from_db()
    return made


def test_the_list_shows_each_candidate_with_its_source_votes_and_shadow_decision(client, acme, lead, policy):
    waiting = candidate(acme, policy, votes=(0.41, 0.88, 0.05))
    client.force_login(lead)

    page = client.get("/t/acme/promotions/").content.decode()

    assert waiting.claim in page and waiting.source_event.text in page
    assert ">0.41<" in page and ">0.88<" in page and ">0.05<" in page
    assert 'decision-reject">Reject<' in page
    assert f'href="/t/acme/promotions/{waiting.pk}/"' in page


def test_a_reviewer_approves_with_a_reason_and_the_memory_is_written(client, acme, reviewer, policy):
    waiting = candidate(acme, policy)
    client.force_login(reviewer)

    response = client.post(
        f"/t/acme/promotions/{waiting.pk}/decide/",
        {"decision": "approve", "reason": "explicit in the email", "seen_version": 1},
    )

    waiting.refresh_from_db()
    assert (waiting.status, waiting.reviewer_decision, waiting.disagreement) == ("approved", "promote", False)
    assert Memory.objects.get(pk=waiting.memory_id).content == waiting.claim
    page = client.get(response["Location"]).content.decode()
    assert "Candidate approved: the memory is written." in page
    assert "The memory it became" in page


def test_a_reject_against_the_policy_is_called_a_disagreement(client, acme, lead, policy):
    waiting = candidate(acme, policy)  # the policy would promote
    client.force_login(lead)

    response = client.post(
        f"/t/acme/promotions/{waiting.pk}/decide/",
        {"decision": "reject", "reason": "too broad", "seen_version": 1},
    )

    waiting.refresh_from_db()
    assert (waiting.status, waiting.disagreement) == ("rejected", True)
    assert "a disagreement" in client.get(response["Location"]).content.decode()


def test_a_decision_needs_a_reason_and_readers_cannot_decide(client, acme, lead, auditor, labeler, policy):
    waiting = candidate(acme, policy)
    client.force_login(lead)
    no_reason = client.post(
        f"/t/acme/promotions/{waiting.pk}/decide/", {"decision": "approve", "seen_version": 1}
    )
    assert "reason: This field is required." in client.get(no_reason["Location"]).content.decode()
    for user in (auditor, labeler):
        client.force_login(user)
        page = client.get(f"/t/acme/promotions/{waiting.pk}/").content.decode()
        assert "Approve: write the memory" not in page
        response = client.post(
            f"/t/acme/promotions/{waiting.pk}/decide/",
            {"decision": "approve", "reason": "x", "seen_version": 1},
        )
        assert response.status_code == 403
    waiting.refresh_from_db()
    assert waiting.status == "proposed"


def test_a_decision_on_a_stale_candidate_changes_nothing(client, acme, lead, reviewer, policy):
    waiting = candidate(acme, policy, decision="reject", by=reviewer)
    client.force_login(lead)

    response = client.post(
        f"/t/acme/promotions/{waiting.pk}/decide/", {"decision": "approve", "reason": "x", "seen_version": 1}
    )

    assert "nothing was changed" in client.get(response["Location"]).content.decode().lower()
    waiting.refresh_from_db()
    assert waiting.status == "rejected" and waiting.memory_id is None


def test_disagreements_show_the_matrix_agreement_and_kappa_with_the_cases(
    client, acme, lead, reviewer, policy
):
    # 10 decided where the policy decided: 7 agree, 3 disagree; one more the policy left for review.
    plan = (
        [((0.95, 0.95, 0.02), "approve")] * 4  # promote / promote
        + [((0.95, 0.95, 0.02), "reject")] * 2  # promote / reject
        + [((0.40, 0.95, 0.02), "reject")] * 3  # reject / reject
        + [((0.40, 0.95, 0.02), "approve")] * 1  # reject / promote
        + [((0.95, 0.95, 0.40), "reject")]  # review / reject
    )
    for i, (votes, decision) in enumerate(plan):
        candidate(acme, policy, subject=f"claim {i}", votes=votes, decision=decision, by=reviewer)
    client.force_login(lead)

    response = client.get("/t/acme/promotions/disagreements/")

    agreement = response.context["promotion"].decided
    assert (agreement.n, agreement.agreed) == (10, 7)
    # p_o = 0.7; p_e = (6*5 + 4*5) / 100 = 0.5; kappa = 0.4
    assert agreement.kappa == pytest.approx(0.4)
    assert response.context["promotion"].matrix.cell("review", "reject") == 1
    page = response.content.decode()
    assert "70% (7 of 10)" in page and "0.40" in page and "fair agreement" in page
    assert "The 3 disagreements" in page
    assert page.count('href="/t/acme/promotions/') >= 4  # a drill-down to each case


def test_disagreements_between_the_active_and_shadow_policy_are_listed(client, acme, lead, policy):
    shadow = policy_set_shadow(tenant=acme, thresholds={"confirm_min": 0.5}, created_by="t")
    memory = make_memory(acme, subject="pickup point")
    for disposition, shadow_disposition in (("uncertain", "confirmed"), ("confirmed", "confirmed")):
        verdict = judged(memory, policy, disposition=disposition, still_true=0.58)
        Verdict.objects.filter(pk=verdict.pk).update(
            shadow_policy=shadow, shadow_disposition=shadow_disposition
        )
    client.force_login(lead)

    response = client.get("/t/acme/promotions/disagreements/")

    matrix = response.context["shadow"].matrix
    assert (matrix.n, matrix.agreed, matrix.cell("uncertain", "confirmed")) == (2, 1, 1)
    page = response.content.decode()
    assert "Shadow policy <strong>v2</strong>" in page
    assert f'href="/t/acme/memories/{memory.pk}/"' in page


def test_a_promotion_assessment_page_shows_its_candidate(client, acme, lead, policy, jev):
    event = event_record(tenant=acme, source="email", text="Invoices go to Harlow Catering Ltd now.")
    proposed = candidate_propose(
        tenant=acme,
        claim="Invoices go to Harlow Catering Ltd.",
        kind="preference",
        subject="invoice addressee",
        source_event=event,
        proposed_by="agent:billing",
        enqueue=lambda a: None,
    )
    run_promotion(proposed.assessment_id, jev=jev)
    client.force_login(lead)

    page = client.get(f"/t/acme/assessments/{proposed.assessment_id}/").content.decode()

    assert "The candidate" in page and "Invoices go to Harlow Catering Ltd." in page
    assert f'href="/t/acme/promotions/{proposed.pk}/"' in page
    assert "Candidates 0" not in page and "Candidates" not in page


def test_the_list_pages_newest_first_through_the_tenants_own_candidates_only(
    client, acme, globex, lead, policy
):
    from memory_review.assessments.services import policy_ensure_default

    theirs = policy_ensure_default(tenant=globex, created_by="test")
    ours = []
    for i in range(55):
        ours.append(candidate(acme, policy, subject=f"acme-{i:02}"))
        if i % 10 == 0:
            candidate(globex, theirs, subject=f"globex-{i:02}")
    client.force_login(lead)

    first = client.get("/t/acme/promotions/?show=all")
    second = client.get(f"/t/acme/promotions/?show=all&after={first.context['listing'].next_cursor}")
    back = client.get(f"/t/acme/promotions/?show=all&before={second.context['listing'].prev_cursor}")

    shown = [c.subject for c in first.context["listing"].rows + second.context["listing"].rows]
    assert shown == [c.subject for c in reversed(ours)]
    assert [c.pk for c in back.context["listing"].rows] == [c.pk for c in first.context["listing"].rows]
    assert "globex" not in first.content.decode() + second.content.decode()
    assert client.get("/t/acme/promotions/?show=all&after=bm90LWEtY3Vyc29y").status_code == 400
