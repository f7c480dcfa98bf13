"""Drawing a sampled audit at size (issue 31, item 1; target: under 5 s over 2,000,000 memories).

    .venv/bin/python bench/sample_draw.py [--memories 2000000] [--repeats 5] [--postgres URL]

One tenant of N memories in the shapes real tenants make: 40 agents with a Zipf-like skew (the
first writes a third of everything), six source channels and five kinds unevenly, so strata run
from a handful of memories to hundreds of thousands; 5% in review, 3% out of force, and one in
ten of those in force moved by a person (they leave the `unreviewed` population); and a burst of
the policy's automatic decisions over the last day (kept, contradicted, superseded) on 6% of them.
Beside it a second tenant a tenth the size, which neither draw may read.

It times `quality.sampling.draw` for both populations at +-3 points and 95% (median and p95 of
`--repeats` runs, each with a new seed, each sealing its sample and items), and prints the
sample's size and strata. Rows are filled around the application (bench/fill.py): the draws read
them as the product would, and verify nothing. The last line is one JSON object."""

import argparse
import json
import statistics
import time
from datetime import timedelta

import django  # noqa: E402
import numpy as np  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

import fill  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory_review.audit.models import Transition  # noqa: E402
from memory_review.integrity.db_context import tenant_context  # noqa: E402
from memory_review.memories.models import Memory, SourceEvent  # noqa: E402
from memory_review.quality import sampling  # noqa: E402
from memory_review.quality.models import AuditItem  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402

CHANNELS = ("chat", "email", "ticket", "slack", "tool", "document")
CHANNEL_WEIGHTS = (0.42, 0.25, 0.15, 0.1, 0.06, 0.02)
KINDS = ("fact", "preference", "decision", "exception", "policy")
KIND_WEIGHTS = (0.55, 0.3, 0.1, 0.04, 0.01)
AGENTS = 40
DECISIONS = (("confirm", "needs_review", "active"), ("contradict", "active", "contradicted"),
             ("supersede", "active", "superseded"))  # fmt: skip


def say(message: str) -> None:
    print(message, flush=True)


def build(slug: str, n: int, seed: int) -> Tenant:
    rng = np.random.default_rng(seed)
    now = timezone.now()
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    origins = SourceEvent.objects.bulk_create(
        SourceEvent(tenant=tenant, source=c, text=f"Origin via {c}.", text_hash="x" * 64, occurred_at=now)
        for c in CHANNELS
    )
    weights = 1 / np.arange(1, AGENTS + 1) ** 1.1
    agent = rng.choice(AGENTS, size=n, p=weights / weights.sum()).tolist()
    channel = rng.choice(len(CHANNELS), size=n, p=CHANNEL_WEIGHTS).tolist()
    kind = rng.choice(len(KINDS), size=n, p=KIND_WEIGHTS).tolist()
    fate = rng.random(n)
    status = np.where(fate < 0.05, "needs_review", np.where(fate < 0.08, "contradicted", "active")).tolist()
    mids = fill.next_ids(Memory, n)
    created = now - timedelta(days=30)

    def memories():
        for i in range(n):
            content = f"Customer {i % 50_000} prefers option {i % 97} (memory {i})."
            yield (
                mids[i], tenant.pk, origins[channel[i]].pk, CHANNELS[channel[i]], KINDS[kind[i]],
                f"subject {i:07d}", content, f"{i:064x}", f"agent:bot-{agent[i]}", f"bot-{agent[i]}",
                status[i], 2, created, created, created,
            )  # fmt: skip

    reviewed = np.flatnonzero((fate >= 0.08) & (fate < 0.172)).tolist()  # a tenth of those in force
    decided = np.flatnonzero(rng.random(n) < 0.06).tolist()
    tids = fill.next_ids(Transition, len(reviewed) + len(decided))

    def moves():
        k = 0
        for i in reviewed:
            at = created + timedelta(days=1)
            yield (tids[k], tenant.pk, mids[i], "active", "active", "approve", "user:1", "checked", "m" * 64,
                   2, at, "k")  # fmt: skip
            k += 1
        for i in decided:
            action, before, after = DECISIONS[i % 3]
            at = now - timedelta(minutes=int(rng.integers(1, 1440)))
            yield (tids[k], tenant.pk, mids[i], before, after, action, "policy:v1", f"{action} by policy:v1",
                   "m" * 64, 2, at, "k")  # fmt: skip
            k += 1

    with fill.filling(Memory, Transition), transaction.atomic():
        fill.write(
            Memory,
            ("id", "tenant_id", "source_event_id", "channel", "kind", "subject", "content", "content_hash",
             "written_by", "agent_id", "status", "row_version", "created_at", "updated_at", "valid_from"),
            memories(),
        )  # fmt: skip
        fill.write(
            Transition,
            ("id", "tenant_id", "memory_id", "from_status", "to_status", "action", "actor", "reason",
             "reason_mac", "row_version", "created_at", "key_id"),
            moves(),
        )  # fmt: skip
    fill.reset_sequences(Memory, Transition)
    say(f"[{slug}] {n:,} memories, {len(reviewed):,} moved by a person, {len(decided):,} by the policy")
    return tenant


def timed(tenant: Tenant, population: str, repeats: int) -> dict:
    start = timezone.now() - timedelta(days=1) if population == "decisions" else None
    times, sample = [], None
    for _ in range(repeats):
        with tenant_context(tenant.pk):
            began = time.perf_counter()
            sample = sampling.draw(tenant=tenant, population=population, by="system:bench", start=start)
            times.append(time.perf_counter() - began)
    ordered = sorted(times)
    sizes = sorted(s["population"] for s in sample.strata)
    assert AuditItem.objects.filter(sample=sample).count() == sample.items
    return {
        "population": population,
        "median_s": round(statistics.median(times), 3),
        "p95_s": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
        "items": sample.items,
        "labels_asked": sample.labels_asked,
        "strata": len(sample.strata),
        "smallest_stratum": sizes[0] if sizes else 0,
        "largest_stratum": sizes[-1] if sizes else 0,
        "in_population": sum(sizes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: a temporary SQLite file)")
    parser.add_argument("--reuse", help="a database an earlier run kept (BENCH_KEEP=1)")
    args = parser.parse_args()
    try:
        if not args.reuse:
            call_command("migrate", verbosity=0)
            build("bench", args.memories, 1)
            build("other", max(1, args.memories // 10), 2)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
        tenant = Tenant.objects.get(slug="bench")
        results = [timed(tenant, population, args.repeats) for population in ("unreviewed", "decisions")]
        for r in results:
            say(
                f"{r['population']:>10}: median {r['median_s']} s, p95 {r['p95_s']} s; {r['items']:,} items "
                f"(+-3 points in every stratum would take {r['labels_asked']:,}) "
                f"from {r['strata']} strata of {r['smallest_stratum']:,}-{r['largest_stratum']:,} "
                f"({r['in_population']:,} in the population)"
            )
        print(json.dumps({"database": connection.vendor, "memories": args.memories, "draws": results}))
    finally:
        throwaway.drop()


if __name__ == "__main__":
    main()
