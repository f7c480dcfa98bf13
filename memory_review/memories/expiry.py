"""The hard-TTL sweep (DESIGN §3): a memory past its `valid_until` stops being in force within
TTL_SWEEP_SECONDS, whether or not an event reaches its scope. Active memories and memories in
review expire (a vote must never confirm a dead fact back); frozen ones stay pinned, as the
lifecycle's table says. Each expiry is one transition by `system:ttl-sweep`, audited like any."""

import logging
from datetime import UTC

from django.utils import timezone

from memory_review.integrity.db_context import tenant_context
from memory_review.lifecycle import Actor, LifecycleError, transition
from memory_review.tenancy.models import Tenant

from .models import EXPIRABLE, Memory

logger = logging.getLogger(__name__)

SWEEP = Actor.system("ttl-sweep")
BATCH = 500  # per tenant per run: the next run, seconds later, takes the rest


def expire_past_ttl(now=None) -> int:
    """Expire every tenant's live memories whose hard TTL has passed; how many moved."""
    now = now or timezone.now()
    moved = 0
    for tenant_id in Tenant.objects.filter(is_active=True).order_by("pk").values_list("pk", flat=True):
        try:
            moved += _sweep_tenant(tenant_id, now)
        except Exception:  # one tenant the job cannot reach must not stop the others' sweep
            logger.exception("hard-TTL sweep: tenant %s skipped", tenant_id)
    return moved


def _sweep_tenant(tenant_id: int, now) -> int:
    moved = 0
    with tenant_context(tenant_id):
        due = (
            Memory.objects.filter(tenant_id=tenant_id, status__in=EXPIRABLE, valid_until__lte=now)
            .order_by("valid_until", "pk")
            .only("pk", "tenant_id", "status", "row_version", "valid_until")[:BATCH]
        )
        for memory in due:
            until = f"{memory.valid_until.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
            try:
                transition(
                    obj=memory,
                    action="expire",
                    actor=SWEEP,
                    reason=f"hard TTL passed (valid until {until}); expired by the scheduled sweep",
                    seen_version=memory.row_version,
                )
            except LifecycleError as exc:  # a person or the policy moved it meanwhile: theirs stands
                # Not the refusal's text: it names the memory's subject, often a person.
                logger.info("memory %s not expired by the sweep: %s", memory.pk, type(exc).__name__)
                continue
            moved += 1
    return moved
