"""The memory health page's figures (issue 31, items 2 and 5): for each population, the newest
sample's estimate in a sentence, by agent and by channel, by stratum, and the trend over the
periods drawn, with a regression flagged where a period's rate is worse than the one before
beyond chance (Newcombe's MOVER interval for the difference lies wholly above zero:
quality/estimates.py). Read by the page, /metrics and the regression notice alike."""

from collections import defaultdict
from dataclasses import dataclass

from django.core.cache import cache

from memory_review.tenancy.models import Tenant

from . import results
from .estimates import Difference, Estimate, Stratum, difference, stratified_estimate
from .models import AuditSample, Population
from .results import KILLED, Results
from .sampling import HELD

UNNAMED = {"agent": "no agent named", "channel": "no channel"}
PERIODS = 12  # the samples of each population the trend shows
SUMMARY_SECONDS = 60  # how long /metrics keeps a tenant's summary before working it out again
POPULATION_WORDS = {
    Population.UNREVIEWED: "memories in force that no person reviewed",
    Population.DECISIONS: "automatic decisions",
}


@dataclass(frozen=True)
class Part:
    """The estimate over the strata sharing one value (an agent, a channel)."""

    name: str
    estimate: Estimate


@dataclass(frozen=True)
class Period:
    sample: AuditSample
    estimate: Estimate
    change: Difference | None  # against the period before, when both have labels
    split: tuple[tuple[int, int], ...] = ()  # its disputed items (results.Results.split)

    @property
    def regressed(self) -> bool:
        return self.change is not None and self.change.worse


@dataclass(frozen=True)
class Health:
    population: str
    newest: Results | None
    by_agent: list[Part]
    by_channel: list[Part]
    killed_true: Estimate | None  # decisions: the contradicted and superseded found true
    worst: dict | None  # the stratum that adds most to the error, its key
    trend: list[Period]  # oldest first

    @property
    def words(self) -> str:
        return POPULATION_WORDS[self.population]

    @property
    def regressed(self) -> Period | None:
        """The newest period with labels, when it is worse than the one before beyond chance: a
        sample drawn this morning and not labeled yet neither raises nor clears the flag."""
        labeled = self.labeled
        return labeled[-1] if labeled and labeled[-1].regressed else None

    @property
    def labeled(self) -> list[Period]:
        return [p for p in self.trend if p.estimate.rate is not None]

    @property
    def parts_tables(self) -> list[tuple[str, list[Part]]]:
        return [("agent", self.by_agent), ("channel", self.by_channel)]

    @property
    def unlabeled(self) -> int:
        return sum(s.unlabeled for s in self.newest.strata) if self.newest else 0


def _strata(found: Results) -> list[tuple[dict, Stratum]]:
    return [
        (
            row.key,
            Stratum(tuple(row.key.values()), listed["population"], row.estimate.sampled, row.estimate.wrong),
        )
        for row, listed in zip(found.strata, found.sample.strata, strict=True)
    ]


def _parts(found: Results, field: str) -> list[Part]:
    grouped: dict[str, list[Stratum]] = defaultdict(list)
    for key, stratum in _strata(found):
        grouped[str(key[field] or UNNAMED[field])].append(stratum)
    parts = [
        Part(name, stratified_estimate(strata, found.sample.confidence)) for name, strata in grouped.items()
    ]
    return sorted(parts, key=lambda part: -(part.estimate.rate or 0) * part.estimate.population)


def _worst(found: Results) -> dict | None:
    """The stratum whose wrong items are the most, by estimate (its rate times its size)."""
    best, most = None, 0.0
    for key, stratum in _strata(found):
        if stratum.sampled and stratum.wrong:
            weight = stratum.wrong / stratum.sampled * stratum.population
            if weight > most:
                best, most = key, weight
    return best


def health(tenant: Tenant, population: str) -> Health:
    samples = list(
        AuditSample.objects.for_tenant(tenant).filter(population=population).order_by("-drawn_at")[:PERIODS]
    )[::-1]
    trend: list[Period] = []
    found = None
    for found in results.results_of(samples):
        # Against the newest period before it that has labels (one not labeled yet says nothing).
        before = next((p.estimate for p in reversed(trend) if p.estimate.rate is not None), None)
        change = difference(before, found.overall) if before else None
        trend.append(Period(found.sample, found.overall, change, found.split))
    if found is None:
        return Health(population, None, [], [], None, None, [])
    killed = None
    if population == Population.DECISIONS:
        dead = [s for key, s in _strata(found) if key["decision"] in KILLED]
        killed = stratified_estimate(dead, found.sample.confidence) if dead else None
    return Health(
        population, found, _parts(found, "agent"), _parts(found, "channel"), killed, _worst(found), trend
    )


def sentence(h: Health) -> str:
    """The estimate as a lead would say it, e.g. "of 1,204,311 memories in force that no person
    reviewed, an estimated 3.1% (2.4-3.9%) are wrong; most of it from the email channel's
    preferences"."""
    if h.newest is None:
        return f"No sample of the {h.words} has been drawn yet."
    overall = h.newest.overall
    if overall.rate is None:
        return f"{h.newest.sample.items:,} {h.words} were drawn; none is labeled yet."
    verb = "are" if h.population == Population.UNREVIEWED else "were"
    held = sum(s["population"] for s in h.newest.sample.strata if s["key"]["decision"] in HELD.values())
    words = h.words + (
        f" ({held:,} of them kills held for a person: the policy's judgment all the same)" if held else ""
    )
    said = (
        f"Of {overall.population:,} {words}, an estimated {overall.rate:.1%} "
        f"({overall.low:.1%}–{overall.high:.1%}) {verb} wrong"
    )
    if h.worst:
        what = f"{h.worst['channel'] or UNNAMED['channel']} {h.worst['kind']}s"
        agent = h.worst["agent"]
        said += f"; most of it from {agent}'s {what}" if agent else f"; most of it from {what} no agent named"
        if h.population == Population.DECISIONS:
            said += f" {h.worst['decision']}"
    return said + "."


def summary(tenant: Tenant) -> dict[str, tuple[float | None, bool]]:
    """Each population's newest estimated rate (None before a label) and whether it regressed,
    kept a minute: what /metrics reports on every scrape, without reading the labels each time."""
    key = f"{results.CACHE_PREFIX}-summary:{tenant.pk}"
    found = cache.get(key)
    if found is None:
        found = {}
        for population in Population.values:
            h = health(tenant, population)
            labeled = h.labeled
            found[population] = (labeled[-1].estimate.rate if labeled else None, h.regressed is not None)
        cache.set(key, found, SUMMARY_SECONDS)
    return found
