"""Adopting a policy with its evidence (issue 9, item 3): a lead proposes thresholds, as shadow or
active, with what the labelled set and the stored votes say about them; an admin who is not the
proposer adopts it (a new policy version; the one it replaces is retired) or declines it.
Proposals are kept whatever happens to them, with who and when, and the version adopted points
back at its proposal: every adopted policy carries its evidence.
"""

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from memory_review import textlimits
from memory_review.assessments.models import PolicyVersion, PromotionCandidate
from memory_review.assessments.policy import Thresholds, decide_promotion
from memory_review.tenancy.models import Tenant

from . import figures, labeling, sweep
from .evidence import verdict_cases
from .models import PolicyProposal
from .stored import StoredReplay, replay_stored

NOTE_MAX = 1000
MODES = (PolicyVersion.Mode.SHADOW.value, PolicyVersion.Mode.ACTIVE.value)
CHANGES_LISTED = 500


class AdoptionError(ValueError):
    """A proposal that cannot be made or decided as asked; nothing was written."""


@dataclass
class CandidateChanges:
    """Stored promotion candidates whose decision the candidate policy would change."""

    candidates: int
    changed: int
    changes: list[tuple[int, str, str]]  # candidate id, active's decision, candidate's


def promotion_changes(tenant: Tenant, *, active: Thresholds, candidate: Thresholds) -> CandidateChanges:
    rows = (
        PromotionCandidate.objects.for_tenant(tenant)
        .filter(supported__isnull=False, scope_fits__isnull=False, conflict__isnull=False)
        .values_list("pk", "supported", "scope_fits", "conflict")
        .order_by("pk")
    )
    out = CandidateChanges(0, 0, [])
    for pk, supported, scope_fits, conflict in rows.iterator(chunk_size=5000):
        votes = {"supported": supported, "scope_fits": scope_fits, "conflict": conflict}
        now, then = decide_promotion(votes, policy=active), decide_promotion(votes, policy=candidate)
        out.candidates += 1
        if now != then:
            out.changed += 1
            if len(out.changes) < CHANGES_LISTED:
                out.changes.append((pk, now, then))
    return out


@dataclass
class Comparison:
    active: Thresholds
    candidate: Thresholds
    labeled_active: sweep.Score | None
    labeled_candidate: sweep.Score | None
    stored: StoredReplay
    promotions: CandidateChanges
    cases: list = field(default_factory=list, repr=False)  # the gold set both were scored on

    @property
    def gold(self) -> int:
        """Gold-labeled verdicts both policies were scored on."""
        return len(self.cases)

    @property
    def disposition_rows(self) -> list[tuple[str, int, int]]:
        """(disposition, verdicts under the active policy, under the candidate), in table order."""
        names = [name for name in sweep.CODES if self.stored.active[name] or self.stored.candidate[name]]
        return [(name, self.stored.active[name], self.stored.candidate[name]) for name in names]

    @property
    def changed_thresholds(self) -> list[tuple[str, object, object]]:
        now, then = self.active.to_data(), self.candidate.to_data()
        return [(name, now[name], then[name]) for name in now if now[name] != then[name]]

    def evidence(self, *, origin: str) -> dict:
        """What a proposal records: the numbers a person saw when they asked for it."""
        return {
            "origin": origin,
            "labels": {"gold_verdicts": self.gold},
            "labeled_set": {
                "active": self.labeled_active.to_dict() if self.labeled_active else None,
                "candidate": self.labeled_candidate.to_dict() if self.labeled_candidate else None,
            },
            "stored_votes": {
                "verdicts": self.stored.verdicts,
                "changed": self.stored.changed,
                "active": dict(self.stored.active),
                "candidate": dict(self.stored.candidate),
            },
            "stored_candidates": {
                "candidates": self.promotions.candidates,
                "changed": self.promotions.changed,
            },
            "changed_thresholds": {name: [old, new] for name, old, new in self.changed_thresholds},
            # The sweep that found it, run again over the same labels, when one did.
            "sweep": sweep.sweep_report(sweep.sweep(self.cases, self.active))
            if origin.startswith("sweep") and self.cases
            else None,
        }


def compare(tenant: Tenant, *, active: Thresholds, candidate: Thresholds) -> Comparison:
    """The candidate beside the active policy: on the labelled set, and replayed over every stored
    vote and candidate of the tenant (no Jev call)."""
    cases, _ = verdict_cases(tenant)
    arrays = sweep.Cases(cases) if cases else None
    return Comparison(
        active=active,
        candidate=candidate,
        labeled_active=arrays.score(active) if arrays else None,
        labeled_candidate=arrays.score(candidate) if arrays else None,
        stored=replay_stored(tenant, active=active, candidate=candidate),
        promotions=promotion_changes(tenant, active=active, candidate=candidate),
        cases=cases,
    )


@figures.figure("compare")
def kept_compare(tenant: Tenant, *, candidate: dict) -> Comparison:
    """compare() against the active policy, as calibration/figures.py keeps it."""
    _, active = labeling.active_policy(tenant)
    return compare(tenant, active=active, candidate=Thresholds.from_data(candidate))


def propose(
    tenant: Tenant, user, *, thresholds: Thresholds, mode: str, reason: str, evidence: dict
) -> PolicyProposal:
    if mode not in MODES:
        raise AdoptionError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if not reason.strip():
        raise AdoptionError("say why: a proposal needs a reason")
    return PolicyProposal.objects.create(
        tenant=tenant,
        thresholds=thresholds.to_data(),
        mode=mode,
        reason=reason.strip(),
        evidence=evidence,
        proposed_by=user,
        proposed_at=timezone.now(),
    )


def adopt(tenant: Tenant, user, proposal_pk: int, *, note: str = "") -> PolicyVersion:
    """A new policy version from the proposal, in its mode; the version it replaces is retired.
    Refused when the proposal is decided already, or the person adopting it proposed it."""
    note = _checked_note(note)
    with transaction.atomic():
        proposal = _open_proposal(tenant, user, proposal_pk)
        # Lock the tenant's versions: two adoptions at once would take one number.
        versions = list(PolicyVersion.objects.for_tenant(tenant).select_for_update().order_by("pk"))
        number = max((v.number for v in versions), default=0) + 1
        PolicyVersion.objects.for_tenant(tenant).filter(mode=proposal.mode).update(
            mode=PolicyVersion.Mode.RETIRED
        )
        version = PolicyVersion.objects.create(
            tenant=tenant,
            number=number,
            mode=proposal.mode,
            thresholds=proposal.thresholds,
            note=textlimits.fit(f"Adopted from proposal {proposal.pk}: {proposal.reason}", 500),
            created_by=f"user:{user.pk}",
        )
        _decide(proposal, user, PolicyProposal.Outcome.ADOPTED, note, policy=version)
        return version


def decline(tenant: Tenant, user, proposal_pk: int, *, note: str) -> PolicyProposal:
    if not note.strip():
        raise AdoptionError("say why: declining a proposal needs a reason")
    note = _checked_note(note)
    with transaction.atomic():
        proposal = _open_proposal(tenant, user, proposal_pk, declining=True)
        _decide(proposal, user, PolicyProposal.Outcome.DECLINED, note)
        return proposal


def _open_proposal(tenant: Tenant, user, pk: int, *, declining: bool = False) -> PolicyProposal:
    proposal = next(iter(PolicyProposal.objects.for_tenant(tenant).select_for_update().filter(pk=pk)), None)
    if proposal is None:
        raise AdoptionError(f"no policy proposal {pk} in this tenant")
    if proposal.outcome:
        raise AdoptionError(f"proposal {pk} was {proposal.outcome} already")
    if not declining and proposal.proposed_by_id == user.pk:
        raise AdoptionError("a second person adopts a policy: you proposed this one")
    return proposal


def _checked_note(note: str) -> str:
    problem = textlimits.too_long(note.strip(), NOTE_MAX)
    if problem:
        raise AdoptionError(f"the note {problem}")
    return note.strip()


def _decide(proposal: PolicyProposal, user, outcome: str, note: str, *, policy=None) -> None:
    proposal.outcome = outcome
    proposal.decided_by = user
    proposal.decided_at = timezone.now()
    proposal.decision_note = note.strip() or None
    proposal.policy = policy
    proposal.save(update_fields=["outcome", "decided_by", "decided_at", "decision_note", "policy"])
