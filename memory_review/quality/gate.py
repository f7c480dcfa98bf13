"""Automation gated on measured precision (issue 31, item 3).

The policy kills a memory alone (contradicts or supersedes it) only in a stratum (agent, channel,
kind) where the sampled audits measured that kind of kill, and its precision's lower bound clears
the tenant's target (the plan's `gate_target`, 0.95 say). Elsewhere the same verdict flags the
memory for a person, with a sentence that says why (assessments/invalidation.py). A tenant
without a target has no gate: the policy acts as it always did.

**What is measured.** The decisions the sampled audits drew over the last `WINDOW_DAYS`, pooled
by stratum: each item ruled as its labels say (quality/results.py), wrong when the memory killed
was true. The kills the gate held count too: the policy said "contradicted", a person decides,
and a label says whether the policy was right, so a closed stratum can earn its way open. The
precision's lower bound is one minus the upper Clopper-Pearson bound of the error rate, at the
plan's confidence; pooled across periods, and without the finite-population correction (which
only narrows the interval), so the bound is conservative.

**What the pipeline reads.** The gate's state is the newest `GateChange` of each stratum: a row
is written, sealed, only when a stratum opens or closes (`refresh`, hourly and when the plan
changes), so every move the policy made alone, or held, rests on a sealed measurement. Kept
(`confirm`) is not gated: holding it would leave a memory in review, where no label could ever
measure the policy's confirmations, and the unreviewed population's estimate covers what it
keeps. A process reads the state once every `READ_SECONDS`."""

import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memory_review.assessments.models import Assessment, Verdict
from memory_review.assessments.policy import Thresholds, decide, policy_action
from memory_review.calibration import figures
from memory_review.integrity.context import acting_as
from memory_review.tenancy.models import Tenant

from . import results, sampling
from .estimates import clopper_pearson
from .models import AuditItem, AuditLabel, AuditPlan, AuditSample, GateChange, Population

GATED = {"contradict": "contradicted", "supersede": "superseded"}
# A stratum's decision in a sample -> the kill it measures (made, or held for a person).
KILL_OF = {**{d: d for d in GATED.values()}, **{held: d for d, held in sampling.HELD.items()}}
WINDOW_DAYS = 90
READ_SECONDS = 30.0
Key = tuple[str, str, str, str]  # agent ("" for none), channel, kind, decision


@dataclass(frozen=True)
class Cell:
    key: Key
    labels: int
    wrong: int
    low: float | None  # the precision's lower bound; None: nothing measured
    is_open: bool


def measure(tenant: Tenant, target: float, *, now: datetime | None = None, confidence: float = 0.95) -> dict:
    """Each stratum's kills, as the last WINDOW_DAYS of decisions samples measured them."""
    now = now or timezone.now()
    samples = {
        sample.pk: sample
        for sample in AuditSample.objects.for_tenant(tenant).filter(
            population=Population.DECISIONS, drawn_at__gt=now - timedelta(days=WINDOW_DAYS)
        )
    }
    labels = defaultdict(list)
    for label in (
        AuditLabel.objects.for_tenant(tenant)
        .filter(item__sample_id__in=list(samples))
        .only("pk", "item_id", "outcome", "adjudicated", "withdrawn_at")
    ):
        labels[label.item_id].append(label)
    counts: dict[Key, list[int]] = defaultdict(lambda: [0, 0])
    for item in AuditItem.objects.filter(sample_id__in=list(samples)).only("pk", "sample_id", "stratum"):
        said = results.ruling(labels.get(item.pk, []))
        stratum = samples[item.sample_id].strata[item.stratum]["key"]
        decision = KILL_OF.get(stratum["decision"])
        if said is None or decision is None:
            continue
        key = (stratum["agent"] or "", stratum["channel"], stratum["kind"], decision)
        counts[key][0] += 1
        counts[key][1] += results.wrong(stratum["decision"], said)
    cells = {}
    for key, (n, wrong) in counts.items():
        low = 1 - clopper_pearson(wrong, n, confidence)[1]
        cells[key] = Cell(key, n, wrong, low, low >= target)
    return cells


def _plan(tenant: Tenant) -> AuditPlan | None:
    """The tenant's plan as its lead set it (None: the defaults, which have no gate)."""
    return AuditPlan.objects.for_tenant(tenant).first()


def refresh(tenant: Tenant, *, by: str, now: datetime | None = None) -> list[GateChange]:
    """Record each stratum whose state the newest measurement changes (a new row, sealed): opened,
    closed, or first measured; a target changed re-records every stratum. None without a target."""
    _read.pop(tenant.pk, None)  # this process reads the state afresh, whatever follows
    plan = _plan(tenant)
    if plan is None or plan.gate_target is None:
        return []
    now = now or timezone.now()
    measured = measure(tenant, plan.gate_target, now=now, confidence=plan.confidence)
    written = []
    with transaction.atomic(), acting_as(by):
        standing = current(tenant)
        for key in sorted(set(measured) | set(standing)):
            cell = measured.get(key) or Cell(key, 0, 0, None, False)
            before = standing.get(key)
            if before is not None and before.is_open == cell.is_open and before.target == plan.gate_target:
                continue
            agent, channel, kind, decision = key
            written.append(
                GateChange.objects.create(
                    tenant=tenant,
                    agent=agent,
                    channel=channel,
                    kind=kind,
                    decision=decision,
                    is_open=cell.is_open,
                    labels=cell.labels,
                    wrong=cell.wrong,
                    precision_low=cell.low,
                    target=plan.gate_target,
                    changed_by=by,
                    changed_at=now,
                )  # fmt: skip
            )
    _read.pop(tenant.pk, None)
    return written


def current(tenant: Tenant | int) -> dict[Key, GateChange]:
    """The newest recorded state of each stratum."""
    found = {}
    for change in GateChange.objects.filter(tenant=tenant).order_by("pk"):
        found[(change.agent, change.channel, change.kind, change.decision)] = change
    return found


_read: dict[int, tuple[float, float | None, dict]] = {}  # tenant id -> (read at, target, state)


def _state(tenant_id: int) -> tuple[float | None, dict[Key, GateChange]]:
    """(target, state), read at most every READ_SECONDS in this process (the pipeline asks for
    each verdict it applies)."""
    found = _read.get(tenant_id)
    if found is None or time.monotonic() - found[0] > READ_SECONDS:
        plans = AuditPlan.objects.filter(tenant_id=tenant_id).values_list("gate_target", flat=True)
        target = next(iter(plans), None)
        found = (time.monotonic(), target, current(tenant_id) if target is not None else {})
        _read[tenant_id] = found
    return found[1], found[2]


def forget() -> None:
    """Read the state afresh next time (tests, and a process told the plan changed)."""
    _read.clear()


def on_kill_asked(sender, *, tenant_id: int, memory, action: str, **kwargs) -> str | None:
    """assessments.policy.kill_asked's receiver (connected in QualityConfig.ready)."""
    return hold_reason(tenant_id, memory, action)


def hold_reason(tenant_id: int, memory, action: str) -> str | None:
    """None when the policy may make this move alone; otherwise the sentence saying why a person
    decides it instead."""
    if action not in GATED:
        return None
    target, state = _state(tenant_id)
    if target is None:
        return None
    decision = GATED[action]
    key = (memory.agent_id or "", memory.channel, memory.kind, decision)
    where = f"{memory.agent_id or 'no agent'}'s {memory.channel} {memory.kind}s"
    change = state.get(key)
    if change is not None and change.is_open:
        return None
    if change is None or change.precision_low is None:
        return (
            f"the gate holds {decision} for {where}: no sampled audit has measured it yet, "
            f"and the tenant's target is a precision of at least {target:.0%}"
        )
    return (
        f"the gate holds {decision} for {where}: its measured precision is at least "
        f"{change.precision_low:.1%} ({change.labels} labels, {change.wrong} wrong), below the "
        f"tenant's target of {target:.0%}"
    )


PREVIEW_MOST = 20_000  # the newest verdicts of the period a preview reads


@dataclass(frozen=True)
class Standing:
    """The gate as the policy page shows it: the target, and each stratum's newest state."""

    target: float | None
    cells: list[GateChange]

    @property
    def open(self) -> int:
        return sum(cell.is_open for cell in self.cells)


def standing(tenant: Tenant) -> Standing:
    plan = _plan(tenant)
    target = plan.gate_target if plan else None
    cells = sorted(
        current(tenant).values(), key=lambda c: (not c.is_open, c.agent, c.channel, c.kind, c.decision)
    )
    return Standing(target, cells if target is not None else [])


def period_days(tenant: Tenant) -> int:
    """The period a preview looks back over: the plan's, a week when it has none."""
    plan = _plan(tenant)
    return plan.every_days if plan and plan.every_days else 7


@dataclass(frozen=True)
class Preview:
    """What the gate, as it stands, would have done with a policy's kills over the last period."""

    days: int
    target: float
    read: int  # verdicts read (the newest PREVIEW_MOST at most)
    capped: bool
    rows: list[tuple[Key, int, int]]  # stratum, kills it would have let alone, kills it would have held

    @property
    def alone(self) -> int:
        return sum(row[1] for row in self.rows)

    @property
    def held(self) -> int:
        return sum(row[2] for row in self.rows)


def preview(tenant: Tenant, thresholds, *, days: int, now: datetime | None = None) -> Preview | None:
    """Decide the last `days` of stored votes under `thresholds` (the active policy, or one being
    weighed for adoption), and ask the gate as it stands about each kill; None without a gate."""
    plan = _plan(tenant)
    if plan is None or plan.gate_target is None:
        return None
    now = now or timezone.now()
    state = current(tenant)
    votes = ("bears", "still_true", "replaces", "partial", "hypothetical", "directive")
    rows = (
        Verdict.objects.for_tenant(tenant)
        .filter(created_at__gt=now - timedelta(days=days), created_at__lte=now, still_true__isnull=False)
        .filter(bears__isnull=False)
        .exclude(assessment__model_name=Assessment.REPLAYED_MODEL)  # copies: each vote counts once
        .order_by("-created_at")
        .values_list(*votes, "event__source", "memory__agent_id", "memory__channel", "memory__kind")
    )[: PREVIEW_MOST + 1]
    counted: dict[Key, list[int]] = defaultdict(lambda: [0, 0])
    read = 0
    for row in rows[:PREVIEW_MOST]:
        read += 1
        # A vote left out (None) counts as 0, as the stored replay counts it (calibration/stored.py).
        said = decide(
            {name: value or 0.0 for name, value in zip(votes, row[:6], strict=True)}, policy=thresholds
        )
        action, _ = policy_action(said, source=row[6], policy=thresholds)
        if action not in GATED:
            continue
        key = (row[7] or "", row[8], row[9], GATED[action])
        change = state.get(key)
        counted[key][0 if change is not None and change.is_open else 1] += 1
    return Preview(
        days, plan.gate_target, read, len(rows) > PREVIEW_MOST,
        sorted(((key, alone, held) for key, (alone, held) in counted.items()), key=lambda row: -row[2]),
    )  # fmt: skip


@figures.figure("gate_preview", rests_on=("votes",))
def kept_preview(tenant: Tenant, *, thresholds: dict, days: int, gate: int, plan: str, until: str) -> Preview:
    """preview() as calibration/figures.py keeps it: counted again when votes arrive, and under
    new parameters when the gate moves (`gate`: its newest change), the plan does (`plan`: when
    it changed), or a day passes (`until`: the period ends today, votes or none)."""
    found = preview(tenant, Thresholds.from_data(thresholds), days=days)
    # The gate turned off since it was asked: kept under a plan no page asks about again.
    return found or Preview(days, 0.0, 0, False, [])


def preview_shown(tenant: Tenant, thresholds) -> figures.Shown | None:
    """What the gate, as it stands, would have done with these thresholds' kills over the last
    period, as a page shows a kept figure (the votes of a period on a large tenant take seconds
    to read: a job counts them); None without a gate."""
    plan = _plan(tenant)
    if plan is None or plan.gate_target is None:
        return None
    newest = GateChange.objects.for_tenant(tenant).order_by("-pk").values_list("pk", flat=True).first()
    return figures.read(
        "gate_preview", tenant, thresholds=thresholds.to_data(), days=period_days(tenant), gate=newest or 0,
        plan=plan.changed_at.isoformat(), until=timezone.localdate().isoformat(),
    )  # fmt: skip


def preview_evidence(shown: figures.Shown | None) -> dict | None:
    """What a proposal keeps of the gate's preview, and when it was counted (None: no gate when
    it was proposed)."""
    if shown is None or shown.value is None:
        return None
    found: Preview = shown.value
    return {
        "days": found.days, "target": found.target, "votes_read": found.read, "capped": found.capped,
        "kills_alone": found.alone, "kills_to_a_person": found.held,
        "counted_at": shown.computed_at.isoformat() if shown.computed_at else None,
        "votes_since": not shown.fresh,
    }  # fmt: skip
