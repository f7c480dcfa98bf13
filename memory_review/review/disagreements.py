"""Where the shadow policy and people (or the active policy) decided differently: the evidence
for calibrating the policy (DESIGN §4, §5)."""

from collections import Counter
from dataclasses import dataclass

from django.db.models import Count, F, QuerySet

from memory_review.assessments.models import Disposition, PolicyVersion, PromotionCandidate, Verdict
from memory_review.calibration import figures
from memory_review.calibration.agreement import Agreement, from_counts
from memory_review.calibration.evidence import verdict_cases
from memory_review.calibration.replay import as_compared
from memory_review.tenancy.models import Tenant

DECISIONS = [choice for choice, _ in PromotionCandidate.Decision.choices]
DISPOSITIONS = [choice for choice, _ in Disposition.choices]


@dataclass
class PromotionAgreement:
    matrix: Agreement  # every decided candidate: the policy's decision against the reviewer's
    decided: Agreement  # only where the policy decided (promote or reject): rate and kappa

    @property
    def left_for_review(self) -> int:
        return self.matrix.n - self.decided.n

    @property
    def disagreed(self) -> int:
        """Decided otherwise than the policy would have (its decision was promote or reject)."""
        return self.decided.n - self.decided.agreed


def _decided(tenant: Tenant) -> QuerySet:
    return PromotionCandidate.objects.for_tenant(tenant).filter(
        reviewer_decision__isnull=False, policy_decision__isnull=False
    )


def promotion_cases(tenant: Tenant) -> QuerySet:
    """The candidates a reviewer decided otherwise than the policy, newest first (read live: a
    page shows the first hundred)."""
    return (
        _decided(tenant)
        .filter(disagreement=True)
        .select_related("source_event")
        .order_by("-updated_at", "-id")
    )


def promotion_agreement(tenant: Tenant) -> PromotionAgreement:
    decided = _decided(tenant)
    counts = {
        (row["policy_decision"], row["reviewer_decision"]): row["n"]
        for row in decided.values("policy_decision", "reviewer_decision").annotate(n=Count("id")).order_by()
    }
    # "review" is the policy leaving it to a person, not a decision to agree or disagree with.
    both_decided = {pair: n for pair, n in counts.items() if pair[0] != PromotionCandidate.Decision.REVIEW}
    return PromotionAgreement(
        matrix=from_counts(counts, order=DECISIONS),
        decided=from_counts(both_decided, order=DECISIONS),
    )


@dataclass
class ShadowAgreement:
    shadow: PolicyVersion | None
    matrix: Agreement  # the active policy's disposition against the shadow's, per verdict


def _judged(tenant: Tenant) -> QuerySet:
    return Verdict.objects.for_tenant(tenant).filter(shadow_disposition__isnull=False)


def shadow_cases(tenant: Tenant) -> QuerySet:
    """Verdicts where the shadow policy decided otherwise than the active one, newest first."""
    return (
        _judged(tenant)
        .exclude(shadow_disposition=F("disposition"))
        .select_related("memory", "event", "shadow_policy", "assessment__policy")
        .order_by("-id")
    )


CASES_SHOWN = 100


def kept_cases(kept: dict) -> tuple[list, list]:
    """The page's newest disagreements (candidates, verdicts), read now by the ids the figure
    kept. Found per request, the verdicts' were a walk of the votes' primary key through the
    newer votes of other tenants: PostgreSQL cannot know one tenant's votes are all older (17 s
    at two tenants of 2,000,000); the figures' job finds them instead."""
    candidates = PromotionCandidate.objects.select_related("source_event").in_bulk(kept["promotion_first"])
    verdicts = Verdict.objects.select_related(
        "memory", "event", "shadow_policy", "assessment__policy"
    ).in_bulk(kept["shadow_first"])
    return (
        [candidates[pk] for pk in kept["promotion_first"] if pk in candidates],
        [verdicts[pk] for pk in kept["shadow_first"] if pk in verdicts],
    )


def shadow_agreement(tenant: Tenant) -> ShadowAgreement:
    judged = _judged(tenant)
    counts = {
        (row["disposition"], row["shadow_disposition"]): row["n"]
        for row in judged.values("disposition", "shadow_disposition").annotate(n=Count("id")).order_by()
    }
    return ShadowAgreement(
        shadow=PolicyVersion.objects.for_tenant(tenant).shadow(),
        matrix=from_counts(counts, order=DISPOSITIONS),
    )


@dataclass
class AgainstLabels:
    """The active and the shadow policy against the labelers' gold outcome, on the same labeled
    verdicts (those the shadow also decided), so the two are compared fairly."""

    active: Agreement
    shadow: Agreement


def against_labels(tenant: Tenant) -> AgainstLabels:
    cases, _ = verdict_cases(tenant)
    gold = {int(case.id[1:]): as_compared(case.expected) for case in cases}
    decided = Verdict.objects.for_tenant(tenant).filter(pk__in=list(gold), shadow_disposition__isnull=False)
    active, shadow = Counter(), Counter()
    for pk, disposition, shadow_disposition in decided.values_list("pk", "disposition", "shadow_disposition"):
        active[(gold[pk], as_compared(disposition))] += 1
        shadow[(gold[pk], as_compared(shadow_disposition))] += 1
    return AgainstLabels(from_counts(active, order=DISPOSITIONS), from_counts(shadow, order=DISPOSITIONS))


@figures.figure("disagreements", standing=True)
def agreement_figures(tenant: Tenant) -> dict:
    """The page's counts, each over every decided candidate or verdict: kept (figures.py)."""
    return {
        "promotion": promotion_agreement(tenant),
        "shadow": shadow_agreement(tenant),
        "labels": against_labels(tenant),
        "promotion_first": list(promotion_cases(tenant).values_list("pk", flat=True)[:CASES_SHOWN]),
        "shadow_first": list(shadow_cases(tenant).values_list("pk", flat=True)[:CASES_SHOWN]),
    }
