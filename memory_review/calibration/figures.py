"""Derived figures kept, not recomputed per request (issue 17): the calibration page, a policy
comparison, the disagreements and the labelers' agreement are computed from every stored vote and
label, which on a tenant of millions takes seconds. A page reads them from here instead.

A figure is a function of (tenant, **params) registered under a name (`@figure("calibration")`),
kept in the shared cache (Redis) with when it was computed and the *mark* of the data it rests on:
the highest verdict, label and policy ids, the labels withdrawn, the candidates' last decision.
Reading one (`read`):

* the kept value whose mark is the data's mark now is fresh, however long ago it was computed;
* on a small tenant (under FIGURES_INLINE_BELOW memories) a missing or stale value is computed
  in the request, as it always was: nothing to wait for;
* on a larger one the kept value is shown with its age and what moved since ("as of 3 min ago;
  new votes since, refreshing") while a Celery job computes the new one; with nothing kept yet,
  the page says the job is running (and how far it got) and polls.

Beat's `refresh_stale` recomputes the parameterless figures of every larger tenant whose mark
moved, so a lead opening the page in the morning finds last night's work already counted.
"""

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.utils import timezone

from memory_review.assessments.models import PolicyVersion, PromotionCandidate, Verdict
from memory_review.audit.models import Transition
from memory_review.memories import tallies
from memory_review.tenancy.models import Tenant

from .models import Label

log = logging.getLogger(__name__)

# Each part of the mark, and what it means when it moves, in a page's words.
MARK_PARTS = {
    "votes": "new votes",
    "labels": "new labels",
    "withdrawn": "labels withdrawn",
    "candidates": "candidates decided",
    "policies": "a policy adopted",
    "retired": "a policy retired",
    "moves": "memories moved",
}
# What most figures rest on: votes, labels and policies, not every memory's move.
COUNTED = ("votes", "labels", "withdrawn", "candidates", "policies", "retired")


REFRESH = "memory_review.calibration.tasks.refresh_figure"
FIGURES: dict[str, Callable] = {}
RESTS_ON: dict[str, tuple[str, ...]] = {}  # the parts of the mark each figure is counted from
# The parameterless figures beat keeps fresh (a comparison has a candidate policy: on demand).
STANDING: list[str] = []


def figure(name: str, *, standing: bool = False, rests_on: tuple[str, ...] = COUNTED):
    """Register `compute(tenant, **params)` as the figure `name`; `standing`: beat keeps the
    parameterless one fresh for every larger tenant; `rests_on`: the parts of the mark whose
    moving makes it stale."""

    def register(compute: Callable) -> Callable:
        FIGURES[name] = compute
        RESTS_ON[name] = rests_on
        if standing:
            STANDING.append(name)
        return compute

    return register


@dataclass
class Shown:
    """What a page shows of a figure: its value (None while the first is computed), when it was
    computed, whether the data moved since, and how far a running job got (0 to 1)."""

    value: object | None
    computed_at: datetime | None = None
    fresh: bool = True
    refreshing: bool = False
    took_ms: int | None = None
    progress: float | None = None
    moved: tuple[str, ...] = ()  # what changed since it was computed, in words
    just_computed: bool = False  # in this request (a small tenant): nothing to say about its age

    @property
    def ready(self) -> bool:
        return self.value is not None


# -- the data's mark ------------------------------------------------------------------------------


def newest_rows(model, tenant, column: str = "id", **where) -> QuerySet:
    """The tenant's row with the highest `column`, as a one-row query of that column: ORDER BY ..
    DESC LIMIT 1, not MAX() (an index read backwards stops at its first row, where a grouped MAX
    over the tenant reads all of its two million verdicts, 250 ms), through the tenant's index
    as TenantQuerySet.tenant_range says why. Ordered by the tenant too: given the range alone
    in this correlated form, PostgreSQL still walked the primary key (55 s, cold, at two tenants
    of 2,000,000); ordered by (tenant, column) only the tenant's index gives the order."""
    rows = model.objects.filter(**where).tenant_range(tenant)
    return rows.order_by("-tenant_id", f"-{column}").values(column)[:1]


def newest_id(model, tenant_id: int) -> int | None:
    """The id of the tenant's newest row, read on its own (newest_rows), as a number a query can
    be planned with; None when the tenant has none."""
    row = newest_rows(model, tenant_id).first()
    return row["id"] if row else None


def newest(model, column: str, **where) -> Subquery:
    """A probe of the mark: the tenant's highest `column` of `model`'s rows (newest_rows)."""
    return Subquery(newest_rows(model, OuterRef("pk"), column, **where))


def counted(model, **where) -> Subquery:
    """A probe of the mark: how many of the tenant's rows of `model` (for tables of few rows)."""
    rows = model.objects.filter(tenant_id=OuterRef("pk"), **where).order_by().values("tenant_id")
    return Subquery(rows.annotate(n=Count("id")).values("n")[:1])


PROBES: dict[str, Callable[[], dict]] = {}  # the parts other packages count (mark_part)


def mark_part(name: str, words: str, probe: Callable[[], dict]) -> None:
    """A part of the mark counted from tables calibration does not own, by the module whose figure
    rests on it (review/team_page.py: the workflow's assignments), so this module imports none of
    theirs. `probe()` names its probes (newest, counted); a part of more than one is kept as their
    values joined, in that order. `words`: what its moving means, in a page's words."""
    MARK_PARTS[name] = words
    PROBES[name] = probe


def mark(tenant_id: int, parts=MARK_PARTS) -> dict:
    """One query: what a figure's inputs are now (only `parts` of it: a page reading one figure
    builds and runs the probes that figure rests on, not all eleven). Verdicts and labels are
    only ever added (a label is withdrawn, never deleted), so their highest ids and the latest
    withdrawal move exactly when the data does; a candidate decided moves its updated_at; a
    policy adopted adds a row. Each part is one probe of an index that leads with the tenant."""
    probes = {
        "votes": lambda: {"votes": newest(Verdict, "id")},
        "labels": lambda: {"labels": newest(Label, "id")},
        "withdrawn": lambda: {"withdrawn": newest(Label, "withdrawn_at", withdrawn_at__isnull=False)},
        "candidates": lambda: {
            "candidates": newest(PromotionCandidate, "updated_at", reviewer_decision__isnull=False)
        },
        "policies": lambda: {"policies": newest(PolicyVersion, "id")},
        "moves": lambda: {"moves": newest(Transition, "seq")},
        "retired": lambda: {"retired": counted(PolicyVersion, mode=PolicyVersion.Mode.RETIRED)},
        **PROBES,
    }
    asked, joined = {}, {}
    for part in parts:
        found = probes[part]()
        asked.update(found)
        if len(found) > 1:
            joined[part] = tuple(found)
    row = Tenant.objects.filter(pk=tenant_id).annotate(**asked).values(*asked).get()
    for part, names in joined.items():
        row[part] = ":".join(str(row.pop(name) or 0) for name in names)
    return {part: value.isoformat() if isinstance(value, datetime) else value for part, value in row.items()}


def _parts(name: str, now: dict) -> dict:
    return {part: now[part] for part in RESTS_ON[name]}


def _moved(then: dict, now: dict) -> tuple[str, ...]:
    return tuple(words for part, words in MARK_PARTS.items() if part in now and then.get(part) != now[part])


# -- keeping and reading ----------------------------------------------------------------------------


# What a kept figure holds changes with the code that makes it: a figure kept by an older release
# is not read by a newer one (2: its charts became SVG, issue 28; the plotly JSON kept before drew
# an empty chart for up to FIGURES_KEEP_SECONDS after an upgrade).
SHAPE = 2


def key(name: str, tenant_id: int, params: dict) -> str:
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:24]
    return f"figure:v{SHAPE}:{name}:{tenant_id}:{digest}"


def _small(tenant: Tenant) -> bool:
    return sum(tallies.counts(tenant).values()) < settings.FIGURES_INLINE_BELOW


def read(name: str, tenant: Tenant, **params) -> Shown:
    """The figure as a page shows it (module docstring). `params` must be JSON: they travel to
    the job that computes it."""
    where = key(name, tenant.pk, params)
    now = mark(tenant.pk, RESTS_ON[name])
    kept = cache.get(where)
    small = _small(tenant)
    if kept and kept["mark"] == now:
        shown = _shown(kept)
        shown.just_computed = small  # as good as: it would be counted now if it had moved
        return shown
    if small:
        shown = _shown(compute(name, tenant, params, now=now))
        shown.just_computed = True
        return shown
    _queue(name, tenant.pk, params)
    if kept:
        stale = _shown(kept)
        stale.fresh, stale.refreshing = False, True
        # A blind labeler's figures count only their own labels: what others did is not theirs.
        stale.moved = () if "labeled_by" in params else _moved(kept["mark"], now)
        return stale
    return Shown(value=None, fresh=False, refreshing=True, progress=cache.get(f"{where}:progress"))


def compute(name: str, tenant: Tenant, params: dict, *, now: list | None = None) -> dict:
    """Compute the figure and keep it under the mark taken before reading its inputs (so data
    arriving meanwhile makes it stale, never lost)."""
    where = key(name, tenant.pk, params)
    now = mark(tenant.pk, RESTS_ON[name]) if now is None else now
    started = time.perf_counter()
    _progress.where = where
    try:
        value = FIGURES[name](tenant, **params)
    finally:
        _progress.where = None
    kept = {
        "mark": now,
        "value": value,
        "at": timezone.now(),
        "took_ms": round((time.perf_counter() - started) * 1000),
    }
    cache.set(where, kept, timeout=settings.FIGURES_KEEP_SECONDS)
    cache.delete(f"{where}:progress")
    return kept


def _shown(kept: dict) -> Shown:
    return Shown(value=kept["value"], computed_at=kept["at"], took_ms=kept["took_ms"])


class _Progress:
    where: str | None = None


_progress = _Progress()


def progress(done: int, total: int) -> None:
    """Called by a figure's computation as it goes; shown while nothing is kept yet."""
    if _progress.where and total:
        cache.set(f"{_progress.where}:progress", round(done / total, 3), timeout=settings.FIGURES_JOB_SECONDS)


def _queue(name: str, tenant_id: int, params: dict) -> None:
    """Queue the job unless one for the same figure is running (a lock that lapses after
    FIGURES_JOB_SECONDS, so a killed worker's figure is taken up again)."""
    where = key(name, tenant_id, params)
    if cache.add(f"{where}:running", 1, timeout=settings.FIGURES_JOB_SECONDS):
        # By name (tasks.py imports this module); a signature, so CELERY_TASK_ALWAYS_EAGER holds.
        current_app.signature(REFRESH, args=(name, tenant_id, params)).delay()


def refresh(name: str, tenant_id: int, params: dict) -> dict:
    """The job's work: compute and keep the figure, then let the next job in."""
    tenant = Tenant.objects.get(pk=tenant_id)
    try:
        kept = compute(name, tenant, params)
        log.info("figure %s for tenant %s computed in %s ms", name, tenant.slug, kept["took_ms"])
        return kept
    finally:
        cache.delete(f"{key(name, tenant_id, params)}:running")


def refresh_stale() -> int:
    """Beat: queue the standing figures of every larger tenant whose data moved since."""
    queued = 0
    for tenant in Tenant.objects.filter(is_active=True):
        if _small(tenant):
            continue
        now = mark(tenant.pk)
        for name in STANDING:
            kept = cache.get(key(name, tenant.pk, {}))
            if not kept or kept["mark"] != _parts(name, now):
                _queue(name, tenant.pk, {})
                queued += 1
    return queued
