"""Automation gated on measured precision (issue 31, item 3): with a target, the policy kills a
memory alone only in a stratum whose kills the sampled audits measured at that precision or
better; elsewhere the same verdict sends it to a person with a sentence that says why. The
gate's state is sealed when it changes, and the policy pages show it and what it would have done."""

import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from memory_review.assessments.invalidation import apply_verdicts
from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.memories.models import Memory, MemoryStatus
from memory_review.quality import gate, results, sampling, schedule
from memory_review.quality.models import AuditItem, GateChange
from tests.factories import judged, make_memory

pytestmark = pytest.mark.django_db


def kill(tenant, policy, **scope) -> Memory:
    """A memory the pipeline's own code judges contradicted."""
    memory = make_memory(tenant, **scope)
    verdict = judged(memory, policy, disposition="contradicted", still_true=0.05)
    apply_verdicts(verdict.assessment)
    memory.refresh_from_db()
    return memory


def plan(tenant, target):
    return schedule.set_plan(
        tenant, by="user:1", every_days=1, precision=0.05, confidence=0.95, budget=500, share=0.25,
        gate_target=target,
    )  # fmt: skip


def audited(tenant, labeler, *, true_every: int = 0):
    """Draw the decisions and label them all: every `true_every`-th memory killed was true."""
    sample = sampling.draw(tenant=tenant, population="decisions", by="user:1", precision=0.01, most=500)
    for n, item in enumerate(AuditItem.objects.filter(sample=sample).order_by("rank")):
        wrongly = true_every and n % true_every == 0
        results.label_record(item=item, labeler=labeler, outcome="true" if wrongly else "false")
    return sample


def test_without_a_target_the_policy_kills_alone(acme, policy):
    assert kill(acme, policy, agent_id="bot").status == MemoryStatus.CONTRADICTED
    assert not GateChange.objects.exists()


def test_with_a_target_an_unmeasured_kill_goes_to_a_person_with_the_reason(acme, policy):
    plan(acme, 0.95)
    memory = kill(acme, policy, agent_id="bot", source="email")

    assert memory.status == MemoryStatus.NEEDS_REVIEW
    move = Transition.objects.get(memory=memory, action="flag")
    assert move.actor == f"policy:{policy.label}" and move.verdict.disposition == "contradicted"
    assert (
        "the gate holds contradicted for bot's email facts: no sampled audit has measured it yet, "
        "and the tenant's target is a precision of at least 95%"
    ) in move.reason


def test_a_stratum_measured_precise_enough_opens_and_kills_alone_and_a_sloppy_one_stays_shut(
    acme, policy, labeler
):
    for _ in range(60):
        kill(acme, policy, agent_id="careful", source="chat")
    for _ in range(30):
        kill(acme, policy, agent_id="sloppy", source="chat")
    sample = sampling.draw(tenant=acme, population="decisions", by="user:1", precision=0.01, most=500)
    strata = {s["key"]["agent"]: n for n, s in enumerate(sample.strata)}
    for n, item in enumerate(AuditItem.objects.filter(sample=sample).order_by("rank")):
        sloppy_and_true = item.stratum == strata["sloppy"] and n % 3 == 0
        results.label_record(item=item, labeler=labeler, outcome="true" if sloppy_and_true else "false")

    plan(acme, 0.9)  # measured at once

    state = {change.agent: change for change in gate.current(acme).values()}
    careful, sloppy = state["careful"], state["sloppy"]
    assert careful.is_open and careful.labels == 60 and careful.wrong == 0
    assert careful.precision_low == pytest.approx(0.025 ** (1 / 60))  # Clopper-Pearson, none wrong
    assert not sloppy.is_open and sloppy.labels == 30 and 0 < sloppy.wrong < 30 and sloppy.precision_low < 0.9
    assert kill(acme, policy, agent_id="careful", source="chat").status == MemoryStatus.CONTRADICTED
    held = kill(acme, policy, agent_id="sloppy", source="chat")
    assert held.status == MemoryStatus.NEEDS_REVIEW
    reason = Transition.objects.get(memory=held, action="flag").reason
    assert (
        f"its measured precision is at least {sloppy.precision_low:.1%} (30 labels, {sloppy.wrong} wrong)"
        in reason
    )
    assert "below the tenant's target of 90%" in reason
    assert verification.problem_in(acme) is None  # every gate change sealed


def test_the_gate_records_only_changes_and_a_new_target_records_every_stratum(acme, policy, labeler):
    for _ in range(40):
        kill(acme, policy, agent_id="bot")
    audited(acme, labeler)
    plan(acme, 0.9)
    assert GateChange.objects.count() == 1 and GateChange.objects.get().is_open

    assert gate.refresh(acme, by="system:test") == []  # nothing changed
    plan(acme, 0.99)  # 40 right of 40 measures at least 91.2%: shut at 99%
    latest = GateChange.objects.order_by("pk").last()
    assert GateChange.objects.count() == 2 and not latest.is_open and latest.target == 0.99
    plan(acme, None)  # the gate off: the policy kills alone again, the history kept
    assert kill(acme, policy, agent_id="bot").status == MemoryStatus.CONTRADICTED
    assert GateChange.objects.count() == 2


def test_held_kills_are_audited_too_so_a_shut_stratum_can_earn_its_way_open(acme, policy, labeler):
    plan(acme, 0.9)
    held = [kill(acme, policy, agent_id="bot") for _ in range(40)]
    assert {memory.status for memory in held} == {MemoryStatus.NEEDS_REVIEW}

    sample = audited(acme, labeler)

    assert [s["key"]["decision"] for s in sample.strata] == ["contradicted (held)"]
    gate.refresh(acme, by="system:test")
    assert gate.current(acme)[("bot", "chat", "fact", "contradicted")].is_open
    assert kill(acme, policy, agent_id="bot").status == MemoryStatus.CONTRADICTED


def test_a_held_kill_found_true_counts_as_the_policys_error(acme, policy, labeler):
    plan(acme, 0.9)
    kill(acme, policy)
    sample = audited(acme, labeler, true_every=1)
    assert results.results(sample).overall.wrong == 1


def test_the_policy_pages_show_the_gate_and_what_it_would_have_done(client, acme, policy, labeler, lead):
    for _ in range(40):
        kill(acme, policy, agent_id="careful")
    audited(acme, labeler)
    plan(acme, 0.9)
    for _ in range(3):
        kill(acme, policy, agent_id="careful")
    for _ in range(2):
        kill(acme, policy, agent_id="new-bot")
    client.force_login(lead)

    body = client.get("/t/acme/policies/").content.decode()

    assert 'data-gate="open"' in body and "1 of 1 measured strata are open" in body
    assert re.search(
        r"would let <strong data-alone>43</strong> go ahead alone and send <strong data-held>2</strong>", body
    )
    compare = client.get("/t/acme/calibration/compare/?contradict_max=0.06").content.decode()
    assert "this candidate's kills" in compare
    assert (
        "<strong data-alone>0</strong>" in compare and "<strong data-held>0</strong>" in compare
    )  # it would kill none


def test_a_lead_sets_the_gate_on_the_health_page_and_a_target_out_of_range_is_refused(client, acme, lead):
    client.force_login(lead)
    asked = {"every_days": 1, "points": 3, "confidence": "0.95", "budget": 400, "share": 25, "gate": 95}
    assert client.post("/t/acme/health/plan/", asked).status_code == 302
    assert schedule.plan_of(acme).gate_target == 0.95
    refused = client.post("/t/acme/health/plan/", {**asked, "gate": 20})
    assert refused.status_code == 400 and schedule.plan_of(acme).gate_target == 0.95
    assert client.post("/t/acme/health/plan/", {**asked, "gate": ""}).status_code == 302
    assert schedule.plan_of(acme).gate_target is None
    with pytest.raises(schedule.PlanRefused, match="gate_target: is the precision the policy must be"):
        schedule.set_plan(
            acme,
            by="user:1",
            every_days=1,
            precision=0.03,
            confidence=0.95,
            budget=4,
            share=0,
            gate_target=1.0,
        )


def test_a_proposal_keeps_what_the_gate_would_have_done_with_its_kills(client, acme, policy, labeler, lead):
    from memory_review.calibration.models import PolicyProposal

    for _ in range(40):
        kill(acme, policy, agent_id="careful")
    audited(acme, labeler)
    plan(acme, 0.9)
    kill(acme, policy, agent_id="new-bot")
    client.force_login(lead)

    client.post(
        "/t/acme/calibration/propose/",
        {"contradict_max": "0.45", "mode": "shadow", "reason": "a little bolder", "origin": "typed in"},
    )

    gate_said = PolicyProposal.objects.get().evidence["gate"]
    counted_at = gate_said.pop("counted_at")
    assert gate_said == {
        "days": 1, "target": 0.9, "votes_read": 41, "capped": False, "kills_alone": 40,
        "kills_to_a_person": 1, "votes_since": False,
    }  # fmt: skip
    assert abs(datetime.fromisoformat(counted_at) - timezone.now()) < timedelta(minutes=1)


def test_the_health_page_says_how_many_of_the_decisions_were_kills_held_for_a_person(acme, policy, labeler):
    from memory_review.quality import health

    plan(acme, 0.9)
    for _ in range(3):
        kill(acme, policy, agent_id="bot")
    audited(acme, labeler)
    said = health.sentence(health.health(acme, "decisions"))
    assert said.startswith(
        "Of 3 automatic decisions (3 of them kills held for a person: the policy's judgment"
    )


def test_on_a_large_tenant_the_preview_is_a_kept_figure_a_job_counts_and_a_proposal_waits_for_it(
    client, acme, policy, labeler, lead, settings, monkeypatch
):
    """The period's votes of a tenant of millions take seconds to read: the policy pages show what
    a job counted (and say so while it counts), and a proposal is not made without it."""
    from memory_review.calibration import figures
    from memory_review.calibration.models import PolicyProposal
    from memory_review.calibration.tasks import refresh_figure

    for _ in range(40):
        kill(acme, policy, agent_id="careful")
    audited(acme, labeler)
    plan(acme, 0.9)
    kill(acme, policy, agent_id="new-bot")
    settings.FIGURES_INLINE_BELOW = 0  # every tenant counts as large
    queued = []
    monkeypatch.setattr(
        figures.current_app,
        "signature",
        lambda name, args: type("S", (), {"delay": lambda s: queued.append(args)})(),
    )
    client.force_login(lead)

    waiting = client.get("/t/acme/policies/").content.decode()
    assert "Counting the period's votes for what the gate would have done" in waiting
    assert 'hx-select="#gate-figures"' in waiting and "data-alone" not in waiting
    proposed = {"contradict_max": "0.45", "mode": "shadow", "reason": "a little bolder", "origin": "typed in"}
    client.post("/t/acme/calibration/propose/", proposed)  # queues the comparison's job and the preview's
    for job in {(n, t, str(p)): (n, t, p) for n, t, p in queued if n != "gate_preview"}.values():
        refresh_figure(*job)  # the comparison counted; the preview not yet
    refused = client.post("/t/acme/calibration/propose/", proposed, follow=True).content.decode()
    assert "what the gate would do with it is still being counted" in refused
    assert not PolicyProposal.objects.exists()

    for name, tenant_id, params in [job for job in queued if job[0] == "gate_preview"]:
        refresh_figure(
            name, tenant_id, params
        )  # what the worker runs, the active policy's and the candidate's
    shown = client.get("/t/acme/policies/").content.decode()
    assert re.search(
        r"would let <strong data-alone>40</strong> go ahead alone and send <strong data-held>1", shown
    )
    assert "Figures as of" in shown
    client.post("/t/acme/calibration/propose/", proposed)
    assert PolicyProposal.objects.get().evidence["gate"]["kills_to_a_person"] == 1
