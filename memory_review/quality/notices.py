"""The regression reaches the tenant's agents (issue 31, item 5): when a population's newest
labeled period is worse than the one before beyond chance (quality/health.py), a signed
`health.regressed` webhook goes to every endpoint that asked for it, once for that period
(agents/webhooks.py `notify`, keyed by the population and the period's sample). Population-level
figures only: rates, intervals, counts, and the agent, channel and kind of the worst stratum."""

import logging

from django.urls import reverse

from memory_review.agents import webhooks
from memory_review.tenancy.models import Tenant

from . import health
from .models import Population

logger = logging.getLogger(__name__)
KIND = "health.regressed"
RECENT = 2  # the labeled periods each run looks at, newest first


def _when(moment) -> str | None:
    return moment.isoformat() if moment is not None else None


def regression_data(tenant: Tenant, h: health.Health, period: health.Period) -> dict:
    """What the notice says of a regressed period: its estimate, the period before's rate, the
    difference with its interval, the test that found it, the health page's sentence and path."""
    labeled = h.labeled
    place = next(k for k, p in enumerate(labeled) if p.sample.pk == period.sample.pk)
    before = labeled[place - 1].estimate if place else None
    now, change, sample = period.estimate, period.change, period.sample
    # The sentence and the worst stratum are the newest draw's: a draw made since and not labeled
    # yet would have them speak of another period.
    newest = h.newest.sample.pk == sample.pk
    return {
        "population": h.population,
        "words": h.words,
        "sample_id": sample.pk,
        "period_start": _when(sample.period_start),
        "period_end": _when(sample.period_end),
        "rate": now.rate,
        "low": now.low,
        "high": now.high,
        "labels": now.sampled,
        "wrong": now.wrong,
        "population_size": now.population,
        "previous_rate": before.rate if before else None,
        "change": change.change,
        "change_low": change.low,
        "change_high": change.high,
        "test": f"Newcombe's MOVER interval for a difference of proportions, {sample.confidence:.0%}",
        "worst_stratum": h.worst if newest else None,
        "sentence": health.sentence(h) if newest else None,
        "page": reverse("memory-health", args=[tenant.slug]),
    }


def notify_regressions(tenant: Tenant) -> int:
    """A `health.regressed` notice for each population whose newest labeled period regressed and
    was not told of before; how many were new."""
    told = 0
    for population in Population.values:
        h = health.health(tenant, population)
        # The newest two labeled periods: one that regressed and was overtaken within the hour by
        # the next period's labels is still told of (the key tells each once); older ones are not
        # news, and a first run would otherwise send a year of them.
        for period in h.labeled[-RECENT:]:
            if not period.regressed:
                continue
            key = f"{population}:{period.sample.pk}"
            if webhooks.notify(tenant, KIND, key, regression_data(tenant, h, period)) is not None:
                logger.info(
                    "memory health: tenant %s's %s regressed; its agents are told", tenant.pk, population
                )
                told += 1
    return told
