"""Entry points for assessments and policy versions; the pipelines live in invalidation.py and
promotion.py."""

from django.db import transaction

from memory_review.tenancy.models import Tenant

from .invalidation import run_invalidation
from .leases import claim
from .models import Assessment, PolicyVersion
from .policy import DEFAULTS, Thresholds
from .promotion import run_promotion


def run_assessment(*, tenant_id: int, assessment_id: int) -> Assessment:
    assessment = claim(tenant_id=tenant_id, assessment_id=assessment_id)  # its purpose read with its lease
    run = run_invalidation if assessment.purpose == Assessment.Purpose.INVALIDATION else run_promotion
    return run(assessment_id, tenant_id=tenant_id, claimed=assessment)


def policy_ensure_default(*, tenant: Tenant, created_by: str) -> PolicyVersion:
    """The tenant's active policy, creating v1 with the design defaults when it has none."""
    active = PolicyVersion.objects.for_tenant(tenant).filter(mode=PolicyVersion.Mode.ACTIVE).first()
    if active is not None:
        return active
    return PolicyVersion.objects.create(
        tenant=tenant,
        number=_next_number(tenant),
        mode=PolicyVersion.Mode.ACTIVE,
        thresholds=DEFAULTS.to_data(),
        note="Design defaults (DESIGN §4).",
        created_by=created_by,
    )


@transaction.atomic
def policy_set_shadow(
    *, tenant: Tenant, thresholds: dict, created_by: str, note: str | None = None
) -> PolicyVersion:
    """A new shadow policy: it decides alongside the active one on every new verdict, and never
    writes. The previous shadow, if any, is retired."""
    data = Thresholds.from_data(thresholds).to_data()  # validates and fills defaults
    PolicyVersion.objects.for_tenant(tenant).filter(mode=PolicyVersion.Mode.SHADOW).update(
        mode=PolicyVersion.Mode.RETIRED
    )
    return PolicyVersion.objects.create(
        tenant=tenant,
        number=_next_number(tenant),
        mode=PolicyVersion.Mode.SHADOW,
        thresholds=data,
        note=note,
        created_by=created_by,
    )


def _next_number(tenant: Tenant) -> int:
    last = (
        PolicyVersion.objects.for_tenant(tenant).order_by("-number").values_list("number", flat=True).first()
    )
    return (last or 0) + 1
