"""Reads the assessment screens share."""

from dataclasses import dataclass

from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from memory_review.tenancy.models import Tenant

from .models import Assessment, Disposition, PromotionCandidate, Verdict


def _verdict_count(**conditions) -> Subquery:
    """A correlated count: an aggregate over the join would GROUP BY every selected column,
    NCLOBs included, which Oracle refuses."""
    counted = (
        Verdict.objects.filter(assessment=OuterRef("pk"), **conditions)
        .order_by()
        .values("assessment")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted), 0)


def assessments_of(tenant: Tenant):
    """The tenant's assessments with their verdict counts (counted for the rows read only)."""
    return (
        Assessment.objects.for_tenant(tenant)
        .tenant_range(tenant)  # read newest first: through (tenant, id), not the primary key
        .select_related("event", "policy")
        .annotate(n_verdicts=_verdict_count(), n_applied=_verdict_count(applied=True))
    )


def assessment_for(tenant: Tenant, pk: int) -> Assessment:
    """The tenant's assessment or a 404 (another tenant's is a 404 too)."""
    return get_object_or_404(Assessment.objects.for_tenant(tenant).select_related("event", "policy"), pk=pk)


def verdicts_of(assessment: Assessment, *, with_unrelated: bool = True):
    """Its voted verdicts, the strongest bearing first, with their memory and the transition each
    caused; keyset-paged on ("-bears", "-id") from the (assessment, -bears, -id) index. Verdicts
    settled by code have no votes (`settled_by_code`)."""
    verdicts = Verdict.objects.filter(assessment=assessment, bears__isnull=False)
    if not with_unrelated:
        verdicts = verdicts.exclude(disposition=Disposition.UNRELATED)
    return verdicts.select_related("memory").prefetch_related("transitions")


VOTED_ORDER = ("-bears", "-id")


def verdict_values(assessment: Assessment, *, after: int, limit: int) -> list[dict]:
    """Its verdicts after id `after`, in id order, as plain values with their memory's subject
    and status (the API's page): a page of 500 as models built 1,000 instances, half the
    request's time at 2,000,000 memories."""
    fields = ("pk", "memory_id", "memory__subject", "memory__status", "disposition", *Verdict.VOTE_NAMES,
              "proposed_status", "applied", "shadow_disposition")  # fmt: skip
    return list(assessment.verdicts.filter(pk__gt=after).order_by("pk").values(*fields)[:limit])


def settled_by_code(assessment: Assessment):
    """Its verdicts without votes (expired by TTL, no source), in the order judged."""
    return (
        Verdict.objects.filter(assessment=assessment, bears__isnull=True)
        .select_related("memory")
        .prefetch_related("transitions")
        .order_by("id")
    )


def candidate_of(assessment: Assessment) -> PromotionCandidate | None:
    """A promotion assessment's candidate (an invalidation has none)."""
    if assessment.purpose != Assessment.Purpose.PROMOTION:
        return None
    return PromotionCandidate.objects.filter(assessment=assessment).select_related("source_event").first()


@dataclass(frozen=True)
class VerdictCounts:
    verdicts: int
    applied: int
    by_disposition: dict[str, int]


def verdict_counts(assessment: Assessment) -> VerdictCounts:
    """How many verdicts it gave, applied, and of each disposition: one grouped query, however many
    verdicts (its page lists a keyset page of them)."""
    rows = (
        Verdict.objects.filter(assessment=assessment)
        .values("disposition")
        .annotate(n=Count("id"), applied=Count("id", filter=Q(applied=True)))
        .order_by()
    )
    by = {row["disposition"]: (row["n"], row["applied"]) for row in rows}
    return VerdictCounts(
        verdicts=sum(n for n, _ in by.values()),
        applied=sum(a for _, a in by.values()),
        by_disposition={disposition: n for disposition, (n, _) in by.items()},
    )
