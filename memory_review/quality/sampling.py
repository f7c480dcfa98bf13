"""Drawing a sampled audit (issue 31, item 1): a stratified random sample, reproducible from a
sealed seed, from one of two populations:

* `unreviewed`: the memories in force (active, inside their validity) that no person ever moved
  or wrote (a reviewer's rewrite is written by `user:<id>`);
* `decisions`: the policy's automatic moves of a period: kept (`confirm`), contradicted,
  superseded; and its kills that were held for a person instead ("contradicted (held)": by the
  gate, quality/gate.py, or a review-only source), so the policy's judgment is measured where it
  was not allowed to act alone too.

Strata are the agent, the source channel, the memory's kind and the decision. Each stratum gets
the labels its rate needs to be known to within the precision asked for (quality/estimates.py,
`labels_needed`): a stratum of 40 is read nearly whole, one of a million needs about 1,067 for
+-3 points at 95%.

**The draw.** Each item's rank is SHA-256 of "<seed>:<id>", its first 15 hex digits read as a
number; a stratum's sample is its items of lowest rank. A keyed hash ranks every item in a
uniformly random order that nobody can steer without the seed, and anyone with the seed can rank
the items again with the standard library (`rank`) and check each drawn item's place.

Two statements read the population: the strata's sizes (for the budget and each stratum's need),
then the ranks, computed by the database (PostgreSQL's and Oracle's own SHA-256; SQLite is given
the function). A stratum of a million that needs a few hundred is cut at a rank below which its
need lies, but for a chance below one in a million (`bound`), so only some thousands of rows
leave the database and are sorted, not the population; a cut that falls short is read again
whole, so the sample is always exactly each stratum's lowest ranks. 3.7 s over 2,000,000
memories (BENCHMARKS.md, "Drawing a sampled audit")."""

import hashlib
import logging
import math
import secrets
from collections import defaultdict
from datetime import datetime

from django.db import connection, transaction
from django.db.models import (
    BigIntegerField,
    Case,
    CharField,
    Count,
    Exists,
    F,
    Func,
    OuterRef,
    Q,
    Value,
    When,
)
from django.db.models.functions import Cast
from django.utils import timezone

from memory_review.audit.models import Transition
from memory_review.integrity.context import acting_as
from memory_review.memories.models import Memory, MemoryStatus
from memory_review.tenancy.models import Tenant

from .estimates import labels_for_an_endless_population, share_of
from .models import AuditItem, AuditSample, Population

RANK_DIGITS = 15  # 60 bits: fits a signed 64-bit integer on every database
DECISIONS = {"confirm": "kept", "contradict": "contradicted", "supersede": "superseded"}
# The policy's kills that a person was asked to decide instead (the gate, or a review-only source):
# drawn beside the kills made, so a label measures the policy's judgment wherever it was held.
HELD = {"contradicted": "contradicted (held)", "superseded": "superseded (held)"}
KEY = ("agent", "channel", "kind", "decision")
RANKS = 16**RANK_DIGITS  # every rank is below it
CUT_MARGIN, CUT_SLACK = 5.0, 10  # a stratum's rank cut: its need, 5 standard deviations and 10 more
NULL_KEY = "\x01(none)"  # a stratum column's NULL, in the cut's join: no agent, channel or kind is named so

logger = logging.getLogger(__name__)


def rank(seed: str, pk: int) -> int:
    """An item's place in its stratum's draw: the first 15 hex digits of SHA-256("<seed>:<id>")."""
    return _rank_of_text(f"{seed}:{pk}")


class SampleRank(Func):
    """`rank` computed by the database, for every row at once: over "<seed>:" || the id as text."""

    output_field = BigIntegerField()
    arg_joiner = " || "

    def __init__(self, seed: str, expression):
        super().__init__(Value(f"{seed}:"), Cast(expression, CharField()))

    def as_sql(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, template="mr_sample_rank(%(expressions)s)", **extra)

    def as_postgresql(self, compiler, connection, **extra):
        template = (
            f"('x' || substr(encode(sha256(convert_to(%(expressions)s, 'UTF8')), 'hex'), 1, {RANK_DIGITS}))"
            f"::bit({RANK_DIGITS * 4})::bigint"
        )
        return super().as_sql(compiler, connection, template=template, **extra)

    def as_oracle(self, compiler, connection, **extra):
        # TO_CHAR: the database character set's bytes (AL32UTF8), not the national one's.
        template = (
            "TO_NUMBER(SUBSTR(RAWTOHEX(STANDARD_HASH(TO_CHAR(%(expressions)s), 'SHA256')), "
            f"1, {RANK_DIGITS}), '{'X' * RANK_DIGITS}')"
        )
        return super().as_sql(compiler, connection, template=template, **extra)


def _rank_of_text(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:RANK_DIGITS], 16)


def on_sqlite_connection(sender, connection, **kwargs):
    if connection.vendor == "sqlite":
        connection.connection.create_function("mr_sample_rank", 1, _rank_of_text, deterministic=True)


def _source(tenant: Tenant, population: str, start: datetime | None, end: datetime):
    """The population's rows, with their stratum's columns named as KEY says, and the memory's id."""
    if population == Population.UNREVIEWED:
        by_people = Transition.objects.filter(memory=OuterRef("pk"), actor__startswith="user:")
        rows = (
            Memory.objects.for_tenant(tenant)
            .filter(status=MemoryStatus.ACTIVE, deleted_at__isnull=True, valid_from__lte=end)
            .filter(Q(valid_until__isnull=True) | Q(valid_until__gt=end))
            .filter(~Exists(by_people))
            .exclude(written_by__startswith="user:")  # a reviewer's rewrite, a person's own
        )
        return rows.annotate(
            s_agent=F("agent_id"), s_channel=F("channel"), s_kind=F("kind"), s_decision=Value("in force"),
            memory_ref=F("pk"),
        )  # fmt: skip
    held = Q(action="flag", verdict__disposition__in=list(HELD))  # a kill the gate or a rule held
    rows = Transition.objects.for_tenant(tenant).filter(
        Q(action__in=DECISIONS) | held, actor__startswith="policy:", memory__isnull=False, created_at__lte=end
    )
    if start is not None:
        rows = rows.filter(created_at__gt=start)
    decision = Case(
        # Cast: Oracle refuses a CASE mixing a bound string with an NVARCHAR2 column (ORA-12704).
        *(
            When(action="flag", verdict__disposition=said, then=Cast(Value(word), CharField(max_length=24)))
            for said, word in HELD.items()
        ),
        default=F("action"), output_field=CharField(),
    )  # fmt: skip
    return rows.annotate(
        s_agent=F("memory__agent_id"), s_channel=F("memory__channel"), s_kind=F("memory__kind"),
        s_decision=decision, memory_ref=F("memory_id"),
    )  # fmt: skip


def bound(need: int, size: int) -> int:
    """The rank below which a stratum's `need` lowest-ranked items all lie, but for a chance too
    small to matter: a cut at `need` plus CUT_MARGIN standard deviations of how many fall below
    it (and a few more), as a share of the 60-bit range. RANKS (no cut) when that is the whole
    stratum. A cut that still falls short is found, and that stratum read whole (`_below`)."""
    share = (need + CUT_MARGIN * math.sqrt(need) + CUT_SLACK) / size
    return RANKS if share >= 1 else max(0, math.floor(share * RANKS))


def _below(source, seed: str, bounds: dict[tuple, int]) -> list[tuple]:
    """The population's rows (KEY's columns, id, memory id, rank) whose rank is below their
    stratum's bound; a stratum without one is read whole. One scan: the bounds are a table of
    their own, joined on the stratum's columns (NULL read as a value no column holds, so a
    hash join serves), and only what passes is sorted, in Python, by the caller. So no stratum
    of a million rows is sorted or windowed to draw a few hundred of it."""
    columns = ("s_agent", "s_channel", "s_kind", "s_decision", "s_id", "memory_ref", "draw_rank")
    ranked = source.annotate(s_id=F("pk"), draw_rank=SampleRank(seed, F("pk"))).values(*columns).order_by()
    inner, params = ranked.query.sql_with_params()
    quote = connection.ops.quote_name
    named = ", ".join(f"src.{quote(column)}" for column in columns)
    cut = cut_strata(bounds, len(params))
    if not cut:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {named} FROM ({inner}) src", params)
            return cursor.fetchall()
    keys = ("k_agent", "k_channel", "k_kind", "k_decision")
    row = "(" + ", ".join(["%s"] * 5) + ")"
    if connection.vendor == "oracle":  # no VALUES list before 23ai's: one row a SELECT
        one = "SELECT " + ", ".join(f"%s {quote(name)}" for name in (*keys, "bound")) + " FROM dual"
        table = f"({' UNION ALL '.join([one] * len(cut))})"
    else:
        table = f"(VALUES {', '.join([row] * len(cut))})"
    # NVL on Oracle: COALESCE would mix an NVARCHAR2 column with a VARCHAR2 bind (ORA-12704).
    null_safe = "NVL" if connection.vendor == "oracle" else "COALESCE"
    joined = " AND ".join(
        f"{null_safe}(src.{quote(column)}, %s) = cut.{quote(key)}"
        for column, key in zip(columns[:4], keys, strict=True)
    )
    sql = (
        f"WITH cut ({', '.join(quote(name) for name in (*keys, 'bound'))}) AS {table} "
        f"SELECT {named} FROM ({inner}) src LEFT JOIN cut ON {joined} "
        f"WHERE cut.{quote('bound')} IS NULL OR src.{quote('draw_rank')} < cut.{quote('bound')}"
    )
    values = [value for key, limit in cut for value in (*(_keyed(v) for v in key), limit)]
    with connection.cursor() as cursor:
        cursor.execute(sql, (*values, *params, *([NULL_KEY] * 4)))
        return cursor.fetchall()


def _drawn(source, seed: str, needs: dict[tuple, int], bounds: dict[tuple, int]) -> dict[tuple, list[tuple]]:
    """Each stratum's `need` items of lowest rank (id, memory id, rank), lowest first. A stratum
    whose cut let through fewer than it needs (a chance below one in a million a stratum) is
    read again whole, so the draw is always exactly the lowest ranks. The strata's sizes were
    read by the statement before: a stratum that first appears in between is left to the next
    draw, and one that shrank below its need is simply read whole."""
    while True:
        passed: dict[tuple, list[tuple]] = defaultdict(list)
        for *key, pk, memory_id, drawn_rank in _below(source, seed, bounds):
            passed[stratum_key(key)].append((drawn_rank, pk, memory_id))
        short = [key for key, limit in bounds.items() if len(passed[key]) < needs[key]]
        if not short:
            break
        logger.info("sampled audit: %s strata's rank cut fell short; read whole", len(short))
        for key in short:
            del bounds[key]
    return {
        key: [(pk, memory_id, drawn_rank) for drawn_rank, pk, memory_id in sorted(rows)[: needs[key]]]
        for key, rows in passed.items()
        if key in needs
    }


def cut_strata(bounds: dict[tuple, int], taken: int) -> list[tuple[tuple, int]]:
    """The strata cut in a statement that already binds `taken` parameters: the largest first
    (lowest bound), five parameters each, as many as the database lets one statement bind (SQLite,
    by Django's count, 999); the rest are read whole: slower, never wrong."""
    room = (connection.features.max_query_params or 65535) - taken - 4  # 4: the join's NULL stand-ins
    return sorted(bounds.items(), key=lambda item: item[1])[: max(0, room // 5)]


def stratum_key(values) -> tuple:
    """A stratum's key as both statements give it: Oracle reads an empty string as NULL, and
    Django's Oracle backend hands a NULL text column back as '' where a raw cursor gives None."""
    if connection.vendor == "oracle":
        return tuple(None if value == "" else value for value in values)
    return tuple(values)


def _keyed(value) -> str:
    return NULL_KEY if value is None else str(value)


def draw(
    *,
    tenant: Tenant,
    population: str,
    by: str,
    precision: float = 0.03,
    confidence: float = 0.95,
    most: int = 2000,
    start: datetime | None = None,
    end: datetime | None = None,
    seed: str | None = None,
) -> AuditSample:
    """Draw a sample and seal it with its items. `by` is who asked (user:<id>, or system:<job>
    for the schedule); `seed` draws again what an earlier seed drew (a new one otherwise).

    `most` is the labels the lead will spend: when the strata need more for `precision` (forty
    agents by six channels by five kinds make a thousand strata, each wanting hundreds), each
    stratum's share is scaled down alike, and the sample says what the precision would have
    needed (`labels_asked`), so the page can say so."""
    if population not in Population.values:
        raise ValueError(f"population must be one of {', '.join(Population.values)}, got {population!r}")
    if not 0 < precision < 0.5:
        raise ValueError(f"precision must be between 0 and 0.5 (0.03 is +-3 points), got {precision}")
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must be between 0.5 and 1 (0.95 is 95%), got {confidence}")
    if most < 1:
        raise ValueError(f"a draw needs at least one label to spend, got {most}")
    end = end or timezone.now()
    if start is not None and start >= end:
        raise ValueError(
            f"the period must start before it ends: {start:%Y-%m-%d %H:%M} is not before {end:%Y-%m-%d %H:%M}"
        )
    seed = seed or secrets.token_hex(32)
    # Labels a stratum of `size` needs (estimates.labels_needed, as a column expression).
    first = labels_for_an_endless_population(precision, confidence)
    strata = ("s_agent", "s_channel", "s_kind", "s_decision")
    source = _source(tenant, population, start, end)
    counted = source.values(*strata).annotate(n=Count("pk")).order_by().values_list(*strata, "n")
    sizes = {stratum_key(key): n for *key, n in counted}
    asked = sum(share_of(size, first, 1.0) for size in sizes.values())
    scale = min(1.0, most / asked) if asked else 1.0
    needs = {key: share_of(size, first, scale) for key, size in sizes.items()}
    bounds = {key: bound(needs[key], sizes[key]) for key in sizes}
    found = _drawn(source, seed, needs, {key: limit for key, limit in bounds.items() if limit < RANKS})
    keys: dict[tuple, int] = {}
    listed: list[dict] = []
    items = []
    for stratum in sorted(found, key=lambda key: tuple("" if v is None else str(v) for v in key)):
        key = (*stratum[:3], DECISIONS.get(stratum[3], stratum[3]))
        keys[key] = len(listed)
        listed.append({"key": dict(zip(KEY, key, strict=True)), "population": sizes[stratum], "sampled": 0})
        for pk, memory_id, drawn_rank in found[stratum]:
            listed[keys[key]]["sampled"] += 1
            items.append(
                AuditItem(
                    tenant=tenant, stratum=keys[key], memory_id=memory_id,
                    transition_id=pk if population == Population.DECISIONS else None,
                    rank=f"{drawn_rank:0{RANK_DIGITS}x}",
                )
            )  # fmt: skip
    with transaction.atomic(), acting_as(by):
        sample = AuditSample.objects.create(
            tenant=tenant, population=population, period_start=start, period_end=end, seed=seed,
            precision=precision, confidence=confidence, budget=most, labels_asked=asked, strata=listed,
            items=len(items), drawn_by=by,
            drawn_at=timezone.now(),
        )  # fmt: skip
        for item in items:
            item.sample = sample
        AuditItem.objects.bulk_create(items, batch_size=2000)
    return sample


def problem(sample: AuditSample) -> str | None:
    """Whether each item's rank is the one its seed gives its id (standard library only), and
    each stratum holds as many as it says: None, or what is wrong."""
    counts = [0] * len(sample.strata)
    for item in AuditItem.objects.filter(sample=sample).order_by("pk"):
        drawn_id = item.transition_id if sample.population == Population.DECISIONS else item.memory_id
        if item.rank != f"{rank(sample.seed, drawn_id):0{RANK_DIGITS}x}":
            return f"item {item.pk} (id {drawn_id}) has rank {item.rank}, but its seed ranks it otherwise"
        if item.stratum >= len(counts):
            return f"item {item.pk} names stratum {item.stratum}, which the sample does not list"
        counts[item.stratum] += 1
    for place, (stratum, count) in enumerate(zip(sample.strata, counts, strict=True)):
        if stratum["sampled"] != count:
            return f"stratum {place} ({stratum['key']}) lists {stratum['sampled']} items but holds {count}"
    return None
