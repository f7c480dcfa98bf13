"""A tenant's past, for calibration (issue 9): a few hundred memories judged months ago, what the
policy made of each, what people then did about it, and the labels calibration labelers have
given those votes since, some disputed and some ruled on by a lead.

Generated, not hand-written: each case is a memory, a later event and the outcome people would
agree is right (`truth`), written from templates with names, channels, cities and products
drawn from a fixed seed, so every run seeds the same history. Jev's votes are drawn around the
truth, a little overconfident, so the reliability diagrams and sweeps have something to say.
Everything goes through the product's services (events, memories, verdicts applied by the
pipeline's own code, people's transitions), in time order, before the demo's stories begin.
"""

import random
from dataclasses import dataclass
from datetime import timedelta

import time_machine
from django.utils import timezone

from memory_review.assessments import policy
from memory_review.assessments.invalidation import apply_verdicts
from memory_review.assessments.models import Assessment, PolicyVersion, PromotionCandidate, Verdict
from memory_review.assessments.promotion import candidate_decide
from memory_review.calibration.models import Label
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, MemoryStatus, content_hash
from memory_review.memories.services import event_record, memory_write
from memory_review.tenancy.models import Tenant

D = policy.Disposition
SEED = 20261130
# How many of each outcome the past holds (labels say so): mostly memories that still hold.
TRUTHS = {
    D.CONFIRMED: 70, D.UNCERTAIN: 34, D.SUPERSEDED: 40, D.CONTRADICTED: 30, D.PARTIAL: 20,
    D.UNRELATED: 20, D.HYPOTHETICAL: 12, D.DIRECTIVE: 14,
}  # fmt: skip
CANDIDATE_TRUTHS = {"promote": 22, "unsupported": 10, "out_of_scope": 9, "conflict": 7}
STARTS_DAYS_AGO, ENDS_DAYS_AGO = 150, 62  # the stories start about 59 days ago
# Confusable outcomes: where a labeler slips, this is what they say instead.
SLIPS = {
    D.CONFIRMED: D.UNCERTAIN, D.UNCERTAIN: D.CONFIRMED, D.SUPERSEDED: D.CONTRADICTED,
    D.CONTRADICTED: D.SUPERSEDED, D.PARTIAL: D.CONTRADICTED, D.UNRELATED: D.UNCERTAIN,
    D.HYPOTHETICAL: D.UNCERTAIN, D.DIRECTIVE: D.UNRELATED,
    "promote": "conflict", "unsupported": "out_of_scope", "out_of_scope": "unsupported",
    "conflict": "promote",
}  # fmt: skip

NAMES = [
    "Aisha Bello", "Bram de Vries", "Chloe Martin", "Dmitri Volkov", "Elena Rossi", "Farid Haddad",
    "Greta Lindqvist", "Hugo Lefebvre", "Ines Carvalho", "Jakub Nowak", "Kofi Mensah", "Lena Fischer",
    "Marco Bianchi", "Nora Quinn", "Oskar Berg", "Paula Romero", "Quentin Moreau", "Rosa Jiménez",
    "Sven Olsen", "Tara Walsh", "Umar Farooq", "Vera Horvat", "Wim Peeters", "Xenia Pappas",
    "Yusuf Kaya", "Zofia Kowalska", "Anton Weber", "Bianca Costa", "Ciaran Byrne", "Dalia Novak",
]  # fmt: skip
CHANNELS = ["email", "SMS", "WhatsApp", "phone", "the app"]
CITIES = ["Leeds", "Lyon", "Porto", "Utrecht", "Graz", "Ghent", "Bristol", "Bologna", "Cork", "Aarhus"]
PRODUCTS = ["Barista Pro espresso machine", "AirCrisp 5L fryer", "StandMix 800", "KettlePure 1.7",
            "SlowCook 6", "BlendMax 1200", "ToastLine 4", "SteamChef oven"]  # fmt: skip
WAREHOUSES = ["Manchester", "Rotterdam", "Lille", "Duisburg", "Dublin"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

# family -> (kind, subject, memory content, {truth: (source, event text)})
FAMILIES = {
    "channel": (
        "preference",
        "{name}: order updates",
        "{name} wants order updates by {a}.",
        {
            D.CONFIRMED: ("chat", "{name}: Thanks, the {a} updates are perfect, please keep them coming."),
            D.UNCERTAIN: ("chat", "{name}: I might change how I get updates at some point, not sure yet."),
            D.PARTIAL: (
                "email",
                "{name}: Keep {a} for delivery updates, but send invoices by {b} from now on.",
            ),
            D.SUPERSEDED: ("email", "{name}: Please switch my order updates from {a} to {b}."),
            D.CONTRADICTED: ("chat", "{name}: I never asked for updates by {a}. Please stop them."),
            D.UNRELATED: ("chat", "{name}: How often should I descale the {p}?"),
            D.HYPOTHETICAL: ("chat", "{name}: If I got a new number, would updates by {b} still reach me?"),
            D.DIRECTIVE: (
                "slack",
                "Team lead: agents, always confirm the customer's update channel before "
                "sending tracking links.",
            ),
        },
    ),
    "city": (
        "fact",
        "{name}: delivery address",
        "{name}'s deliveries go to their address in {c}.",
        {
            D.CONFIRMED: ("ticket", "{name}: the delivery to {c} arrived this morning, all fine."),
            D.UNCERTAIN: ("chat", "{name}: I may be staying somewhere else for a while this spring."),
            D.PARTIAL: (
                "email",
                "{name}: large items still go to {c}, but small parcels to my office in {d}.",
            ),
            D.SUPERSEDED: ("email", "{name}: I have moved to {d}. Please deliver there from now on."),
            D.CONTRADICTED: ("ticket", "{name}: I don't live in {c} and never have; that address is wrong."),
            D.UNRELATED: ("chat", "{name}: Can I pay the balance by bank transfer?"),
            D.HYPOTHETICAL: ("chat", "{name}: If I moved to {d} next year, would delivery cost more?"),
            D.DIRECTIVE: ("slack", "Ops: agents, re-verify the delivery address on any order over €500."),
        },
    ),
    "parts": (
        "config",
        "{name}: spare parts for the {p}",
        "Spare parts for {name}'s {p} ship from {w}.",
        {
            D.CONFIRMED: ("tool", "Warehouse log: {name}'s {p} parts shipped from {w} today."),
            D.UNCERTAIN: ("document", "Ops note: parts routing for the {p} is under review this quarter."),
            D.PARTIAL: (
                "document",
                "Ops: {p} filters now come from {x}; its other parts still ship from {w}.",
            ),
            D.SUPERSEDED: ("document", "Ops: all {p} spare parts for {name}'s order now ship from {x}."),
            D.CONTRADICTED: (
                "tool",
                "Stock check: {w} has never stocked {p} parts; the routing note was wrong.",
            ),
            D.UNRELATED: ("chat", "{name}: Could you change the gift message on my order?"),
            D.HYPOTHETICAL: (
                "document",
                "Ops: should {w} close for stocktaking, {p} parts would come from {x}.",
            ),
            D.DIRECTIVE: ("slack", "Ops: log the shipping warehouse on every spare-parts order."),
        },
    ),
}
CANDIDATE_TEMPLATES = {
    "promote": ("chat", "{name}: please always deliver on {day}s, I'm only home then.",
                "{name} wants deliveries on {day}s."),
    "unsupported": ("chat", "{name}: is {day} delivery possible for the {p}?",
                    "{name} wants deliveries on {day}s."),
    "out_of_scope": ("chat", "{name}: for this one order, please deliver on {day}.",
                     "All of {name}'s deliveries come on {day}s."),
    "conflict": ("email", "{name}: deliver on {day}s, and leave parcels with the neighbour.",
                 "Parcels for {name} may be left with a neighbour."),
}  # fmt: skip


@dataclass
class _Case:
    truth: str
    family: str
    fill: dict
    at: object  # when the later event happened
    customer: str = ""
    memory: Memory | None = None


def _clip(value: float) -> float:
    return round(min(0.99, max(0.01, value)), 3)


def judge(memory: Memory, event, votes: dict[str, float], *, version: PolicyVersion, tokens: int) -> Verdict:
    """The verdict on a memory from a later event, written first and then applied by the
    pipeline's own code (DESIGN §4), as the seeded model's."""
    disposition = policy.decide(votes, policy=policy.Thresholds.from_data(version.thresholds))
    assessment = Assessment.objects.create(
        tenant=memory.tenant, purpose=Assessment.Purpose.INVALIDATION, event=event, policy=version,
        state=Assessment.State.RUNNING, offline_standin=True, model_name=Assessment.SEEDED_MODEL,
        question_set_version="seed-demo", requests=1, input_tokens=tokens, latency_ms=140,
    )  # fmt: skip
    verdict = Verdict.objects.create(
        tenant=memory.tenant, assessment=assessment, memory=memory, event=event,
        row_version=memory.row_version,
        disposition=disposition, proposed_status=policy.PROPOSED_STATUS.get(disposition), **votes,
    )  # fmt: skip
    apply_verdicts(assessment)
    Assessment.objects.filter(pk=assessment.pk).update(
        state=Assessment.State.DONE, finished_at=timezone.now()
    )
    return verdict


def verdict_votes(truth: str, rng: random.Random) -> dict[str, float]:
    """Jev's six votes for a case, drawn around the truth: mostly right, sometimes far off."""
    b = rng.betavariate
    still = {D.CONFIRMED: (7, 2), D.UNCERTAIN: (4, 4), D.PARTIAL: (2, 5), D.SUPERSEDED: (1.5, 7),
             D.CONTRADICTED: (1.5, 7)}.get(truth, (3, 3))  # fmt: skip
    return {
        "bears": _clip(b(2, 5) if truth == D.UNRELATED else b(8, 1.5)),
        "still_true": _clip(b(*still)),
        "replaces": _clip(
            b(6, 2) if truth == D.SUPERSEDED else b(2, 4) if truth == D.CONTRADICTED else b(1, 6)
        ),
        "partial": _clip(b(7, 2) if truth == D.PARTIAL else b(1.2, 6)),
        "hypothetical": _clip(b(6, 2) if truth == D.HYPOTHETICAL else b(1, 12)),
        "directive": _clip(b(6, 2) if truth == D.DIRECTIVE else b(1, 12)),
    }


def candidate_votes(truth: str, rng: random.Random) -> dict[str, float]:
    b = rng.betavariate
    return {
        "supported": _clip(b(2, 3) if truth == "unsupported" else b(9, 1.2)),
        "scope_fits": _clip(b(2, 3) if truth == "out_of_scope" else b(8, 1.5)),
        "conflict": _clip(b(5, 3) if truth == "conflict" else b(1, 12)),
    }


class HistorySeeder:
    def __init__(
        self, tenant: Tenant, *, users: dict, labelers: list[str], lead: str, version: PolicyVersion
    ):
        self.tenant = tenant
        self.users = users
        self.labelers = labelers  # usernames, the first labels everything
        self.lead = users[lead]
        self.version = version
        self.thresholds = policy.Thresholds.from_data(version.thresholds)
        self.rng = random.Random(f"{SEED}:{tenant.slug}")
        self.now = timezone.now()
        self.labels: list[tuple[str, object, str]] = []  # (kind, item, truth)
        self.candidates: dict[int, tuple[int, str]] = {}  # number -> (candidate id, truth)

    def run(self) -> None:
        """Every step at the time it happened, in time order, so the audit trail's times only
        move forward; labels (not on the trail) come last, given in the last three weeks."""
        steps = []
        for i, case in enumerate(self._cases()):
            steps += [
                (case.at - timedelta(hours=5), lambda i=i, case=case: self._remember(i, case)),
                (case.at, lambda case=case: self._judge(case)),
                (case.at + timedelta(hours=2), lambda case=case: self._review(case)),
            ]
        for i, (truth, at) in enumerate(self._candidate_times()):
            steps += [
                (at, lambda i=i, truth=truth: self._candidate(i, truth)),
                (at + timedelta(hours=3), lambda i=i: self._decide(i)),
            ]
        for at, step in sorted(steps, key=lambda pair: pair[0]):
            with time_machine.travel(at, tick=False):
                step()
        self._label()

    def _cases(self) -> list[_Case]:
        truths = [truth for truth, n in TRUTHS.items() for _ in range(n)]
        self.rng.shuffle(truths)
        span = STARTS_DAYS_AGO - ENDS_DAYS_AGO
        cases = []
        for i, truth in enumerate(truths):
            a, b = self.rng.sample(CHANNELS, 2)
            c, d = self.rng.sample(CITIES, 2)
            w, x = self.rng.sample(WAREHOUSES, 2)
            fill = {"name": NAMES[i % len(NAMES)], "a": a, "b": b, "c": c, "d": d, "w": w, "x": x,
                    "p": self.rng.choice(PRODUCTS)}  # fmt: skip
            at = self.now - timedelta(days=STARTS_DAYS_AGO - span * i / len(truths))
            cases.append(_Case(truth, self.rng.choice(list(FAMILIES)), fill, at))
        return cases

    def _remember(self, i: int, case: _Case) -> None:
        kind, subject, content, _ = FAMILIES[case.family]
        case.customer = f"cust-{4100 + i}"
        first = event_record(
            tenant=self.tenant, source="chat",
            text="Agent note from the conversation: " + content.format(**case.fill),
            user_id=case.customer, agent_id="support-bot",
            occurred_at=timezone.now() - timedelta(days=self.rng.uniform(10, 40)),
        )  # fmt: skip
        case.memory = memory_write(
            event=first, kind=kind, subject=subject.format(**case.fill), content=content.format(**case.fill),
            written_by="agent:support-bot", user_id=case.customer, agent_id="support-bot",
        )  # fmt: skip

    def _judge(self, case: _Case) -> None:
        """The verdict written first, then applied by the pipeline's own code (DESIGN §4)."""
        source, text = FAMILIES[case.family][3][case.truth]
        memory = case.memory
        event = event_record(
            tenant=self.tenant, source=source, text=text.format(**case.fill), user_id=case.customer,
            agent_id="support-bot",
        )  # fmt: skip
        votes = verdict_votes(case.truth, self.rng)
        verdict = judge(memory, event, votes, version=self.version, tokens=2100 + len(text) // 4)
        self.labels.append(("verdict", verdict, case.truth))

    def _review(self, case: _Case) -> None:
        """What a person did with the memory afterwards: settled what the policy left for review,
        and brought back what it killed wrongly."""
        memory, truth = Memory.objects.get(pk=case.memory.pk), case.truth
        kills = {D.SUPERSEDED: "supersede", D.CONTRADICTED: "contradict", D.PARTIAL: "contradict"}
        actor = Actor.user(self.lead)
        if memory.status == MemoryStatus.NEEDS_REVIEW:
            action = kills.get(truth, "approve")
            reason = {
                "approve": "Checked with the customer: still right.",
                "supersede": "Replaced: the customer's later message says otherwise.",
                "contradict": "No longer right as written; the agent keeps the current part in a new memory.",
            }[action]
        elif memory.status in (MemoryStatus.CONTRADICTED, MemoryStatus.SUPERSEDED) and truth not in kills:
            action, reason = "restore", "Killed by the policy, but the event does not change it: restored."
        else:
            return
        transition(obj=memory, action=action, actor=actor, reason=reason, seen_version=memory.row_version)

    def _candidate_times(self) -> list[tuple[str, object]]:
        truths = [truth for truth, n in CANDIDATE_TRUTHS.items() for _ in range(n)]
        self.rng.shuffle(truths)
        span = STARTS_DAYS_AGO - ENDS_DAYS_AGO
        return [
            (truth, self.now - timedelta(days=STARTS_DAYS_AGO - span * (i + 0.5) / len(truths)))
            for i, truth in enumerate(truths)
        ]

    def _candidate(self, i: int, truth: str) -> None:
        source, text, claim = CANDIDATE_TEMPLATES[truth]
        fill = {
            "name": NAMES[(i * 7) % len(NAMES)],
            "day": self.rng.choice(DAYS),
            "p": self.rng.choice(PRODUCTS),
        }
        customer = f"cust-{5200 + i}"
        event = event_record(
            tenant=self.tenant,
            source=source,
            text=text.format(**fill),
            user_id=customer,
            agent_id="support-bot",
        )
        votes = candidate_votes(truth, self.rng)
        assessment = Assessment.objects.create(
            tenant=self.tenant, purpose=Assessment.Purpose.PROMOTION, event=event, policy=self.version,
            state=Assessment.State.DONE, offline_standin=True, model_name=Assessment.SEEDED_MODEL,
            question_set_version="seed-demo", requests=1, input_tokens=900, latency_ms=95,
            finished_at=timezone.now(),
        )  # fmt: skip
        claim = claim.format(**fill)
        candidate = PromotionCandidate.objects.create(
            tenant=self.tenant, kind="preference", subject=f"{fill['name']}: delivery", claim=claim,
            claim_hash=content_hash(claim), source_event=event, source_hash=event.text_hash,
            proposed_by="agent:support-bot", user_id=customer, agent_id="support-bot", assessment=assessment,
            policy_decision=policy.decide_promotion(votes, policy=self.thresholds), **votes,
        )  # fmt: skip
        self.labels.append(("candidate", candidate, truth))
        self.candidates[i] = (candidate.pk, truth)

    def _decide(self, i: int) -> None:
        pk, truth = self.candidates[i]
        candidate = PromotionCandidate.objects.get(pk=pk)
        if truth == "promote":
            action, reason = "approve", "Promoted: the customer asked for it in so many words."
        else:
            why = {"unsupported": "the message only asks", "out_of_scope": "it was about one order",
                   "conflict": "it conflicts with the delivery rules"}[truth]  # fmt: skip
            action, reason = "reject", f"Not promoted: {why}."
        candidate_decide(
            candidate=candidate, action=action, actor=Actor.user(self.lead), reason=reason,
            seen_version=candidate.row_version,
        )  # fmt: skip

    def _label(self) -> None:
        """Labels given in the last three weeks: the first labeler labels everything, the second
        most, the third some; a labeler slips now and then, and the lead rules on most disputes."""
        shares = [1.0, 0.65, 0.3][: len(self.labelers)]
        start = self.now - timedelta(days=21)
        for n, (kind, item, truth) in enumerate(self.labels):
            said = []
            for username, share in zip(self.labelers, shares, strict=True):
                if self.rng.random() >= share:
                    continue
                outcome = SLIPS[truth] if self.rng.random() < 0.09 else truth
                alternatives = (
                    [SLIPS[truth]]
                    if truth in (D.SUPERSEDED, D.CONTRADICTED) and self.rng.random() < 0.4
                    else []
                )
                at = start + timedelta(days=21 * n / len(self.labels), minutes=len(said) * 90)
                with time_machine.travel(at, tick=False):
                    said.append(
                        self._write(kind, item, username, outcome, [a for a in alternatives if a != outcome])
                    )
            if len({label.outcome for label in said}) > 1 and self.rng.random() < 0.6:
                with time_machine.travel(
                    start + timedelta(days=21 * n / len(self.labels), hours=6), tick=False
                ):
                    self._write(
                        kind,
                        item,
                        None,
                        truth,
                        [],
                        adjudicated=True,
                        note="Ruled on reading the event again.",
                    )

    def _write(self, kind, item, username, outcome, alternatives, *, adjudicated=False, note=None) -> Label:
        return Label.objects.create(
            tenant=self.tenant,
            labeler=self.users[username] if username else self.lead,
            outcome=outcome,
            alternatives=alternatives,
            adjudicated=adjudicated,
            note=note,
            **{kind: item},
        )
