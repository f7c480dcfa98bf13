"""State read from the database when Prometheus scrapes: per tenant, the review queue's depth and
its oldest wait, memories by status (the tallies the home page reads: one row per status),
assessments not yet done, how long the oldest audit row has waited for the sequencer and the
oldest memory for its owed instruction vote, and the
sampled audits' newest estimate of how wrong the memory is, and whether it regressed (worked out
once a minute a tenant: quality/health.py `summary`). Cheap queries only, each under the
tenant's row-level context."""

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from memory_review.assessments.models import Assessment, ScreeningOwed
from memory_review.audit import sequencer
from memory_review.integrity.db_context import tenant_context
from memory_review.memories.models import Memory, MemoryStatus, MemoryTally
from memory_review.memories.tallies import summed
from memory_review.quality import health
from memory_review.tenancy.models import Tenant

OPEN_STATES = (Assessment.State.QUEUED, Assessment.State.RUNNING, Assessment.State.FAILED)


class DomainCollector(Collector):
    def collect(self):
        queue = GaugeMetricFamily(
            "memory_review_review_queue_depth",
            "Memories waiting for a person (needs_review).",
            labels=["tenant"],
        )
        memories = GaugeMetricFamily(
            "memory_review_memories", "Memories by status.", labels=["tenant", "status"]
        )
        assessments = GaugeMetricFamily(
            "memory_review_assessments", "Assessments queued, running or failed.", labels=["tenant", "state"]
        )
        oldest = GaugeMetricFamily(
            "memory_review_review_queue_oldest_wait_seconds",
            "How long the oldest item in the review queue has waited (0 when it is empty).",
            labels=["tenant"],
        )
        waiting = GaugeMetricFamily(
            "memory_review_audit_oldest_waiting_seconds",
            "How long the oldest audit row or feed change has waited for its position (0 when none "
            "waits): the sequencer links them within seconds; alert well before "
            "AUDIT_SEQUENCE_BOUND_SECONDS, when verify_audit reports the row.",
            labels=["tenant"],
        )
        wrong = GaugeMetricFamily(
            "memory_review_memory_wrong_ratio",
            "The newest sampled audit's estimated share of wrong items, per population: memories in "
            "force that no person reviewed, or the automation's decisions (absent before a label).",
            labels=["tenant", "population"],
        )
        regressed = GaugeMetricFamily(
            "memory_review_memory_wrong_regressed",
            "1 when the newest period's estimated rate is worse than the one before beyond chance "
            "(Newcombe's interval for the difference above zero): alert on it.",
            labels=["tenant", "population"],
        )
        owed = GaugeMetricFamily(
            "memory_review_screening_owed_oldest_seconds",
            "How long the oldest memory still to get Jev's instruction vote (an import's, or written "
            "while Jev did not answer in time) has been in force on the rules alone (0 when none is "
            "owed); a sweep keeps asking (assessments/screening.py).",
            labels=["tenant"],
        )
        now = timezone.now()
        for tenant in Tenant.objects.filter(is_active=True).order_by("slug"):
            tenant_id, slug = tenant.pk, tenant.slug
            with tenant_context(tenant_id):
                for population, (rate, worse) in health.summary(tenant).items():
                    if rate is not None:
                        wrong.add_metric([slug, population], rate)
                    regressed.add_metric([slug, population], 1.0 if worse else 0.0)
                tallies = summed(MemoryTally.objects.filter(tenant_id=tenant_id))
                states = dict.fromkeys(OPEN_STATES, 0)
                states.update(  # one grouped count over the (tenant, state, lease) index
                    Assessment.objects.filter(tenant_id=tenant_id, state__in=OPEN_STATES)
                    .values_list("state")
                    .annotate(n=Count("id"))
                    .order_by()
                )
                first = (
                    Memory.objects.for_tenant(tenant_id).needs_review().aggregate(at=Min("flagged_at"))["at"]
                )
                since = sequencer.oldest_waiting(tenant_id)
                unscreened = ScreeningOwed.objects.filter(tenant_id=tenant_id, screened_at__isnull=True)
                owed_since = unscreened.aggregate(at=Min("owed_since"))["at"]
            owed.add_metric([slug], (now - owed_since).total_seconds() if owed_since else 0.0)
            waiting.add_metric([slug], (now - since).total_seconds() if since else 0.0)
            oldest.add_metric([slug], (now - first).total_seconds() if first else 0.0)
            queue.add_metric([slug], tallies.get(MemoryStatus.NEEDS_REVIEW, 0))
            for status in MemoryStatus.values:
                memories.add_metric([slug, status], tallies.get(status, 0))
            for state, n in states.items():
                assessments.add_metric([slug, state], n)
        yield queue
        yield memories
        yield assessments
        yield oldest
        yield waiting
        yield wrong
        yield regressed
        yield owed
