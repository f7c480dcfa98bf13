"""How fast the review screens answer on a large tenant, beside Django's admin changelist of the
same memories in the same run.

One tenant with N memories (default 200,000; 5% in needs_review), ten verdicts per memory, and
one heavy memory with 1,000 verdicts and 50 links. Each page is requested in-process through
Django's test client (middleware, view, queries and template: the server's time, not the
network's), after warm-up requests, and timed over repeated requests:

    .venv/bin/python bench/review_pages.py [--memories 200000] [--repeats 30] [--postgres URL]
    BENCH_KEEP=1 .venv/bin/python bench/review_pages.py ...   # keeps the database and says where
    .venv/bin/python bench/review_pages.py --reuse URL-or-path  # measures it again, no build

A throwaway SQLite file, or with `--postgres postgres://postgres@127.0.0.1:5432` a throwaway
PostgreSQL database. The last line is one JSON object with every figure.
"""

import argparse
import json
import random
import statistics
import time
from datetime import timedelta

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory_review.assessments.models import Assessment, PolicyVersion, Verdict  # noqa: E402
from memory_review.assessments.policy import Thresholds, decide  # noqa: E402
from memory_review.audit import chain  # noqa: E402
from memory_review.audit.heads import lock_head  # noqa: E402
from memory_review.audit.keys import keyring  # noqa: E402
from memory_review.audit.models import Transition  # noqa: E402
from memory_review.memories import tallies  # noqa: E402
from memory_review.memories.models import Memory, MemoryLink, SourceEvent, content_hash  # noqa: E402
from memory_review.review.lists import QUEUE_ORDERS  # noqa: E402
from memory_review.review.paging import encode  # noqa: E402
from memory_review.tenancy.models import Membership, Role, Tenant  # noqa: E402
from memory_review.workflow import assignment  # noqa: E402

BATCH = 5000
KINDS = [kind for kind, _ in Memory.Kind.choices]
SOURCES = [source for source, _ in SourceEvent.Source.choices]
POLICY = Thresholds()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def say(message: str) -> None:
    print(message, flush=True)


# -- the data ------------------------------------------------------------------------------------


@transaction.atomic
def write_flags(tenant: Tenant, flag_verdict: dict[int, int], event_id: int) -> None:
    """The queue's flag transitions, hash-chained and signed as the application signs them."""
    ring = keyring()
    key = ring.key(ring.current)
    head = lock_head(tenant.pk)
    rows, prev, seq = [], head.head_hash, head.seq
    flagged = Memory.objects.for_tenant(tenant).needs_review().order_by("flagged_at", "pk")
    for pk, flagged_at, hashed in flagged.values_list("pk", "flagged_at", "content_hash"):
        seq += 1
        reason = f"uncertain by policy:v1 on event {event_id}"
        row = Transition(
            tenant_id=tenant.pk,
            seq=seq,
            memory_id=pk,
            from_status="active",
            to_status="needs_review",
            action="flag",
            actor="policy:v1",
            reason=reason,
            reason_mac=chain.text_mac(reason, key),
            verdict_id=flag_verdict[pk],
            row_version=2,
            content_hash=hashed,
            created_at=flagged_at,
            prev_hash=prev,
            key_id=ring.current,
        )
        row.hash = chain.row_hash(row, ring)
        prev = row.hash
        rows.append(row)
    Transition.objects.bulk_create(rows, batch_size=1000)
    head.seq, head.head_hash = seq, prev
    head.save(update_fields=["seq", "head_hash"])


def build(n: int) -> dict:
    """The tenant, its people, N memories with ten verdicts each, the queue's flag transitions,
    and the heavy memory. Rows go in with bulk_create (the chain is computed as append() would):
    the point is the pages' speed, not the writers'."""
    rng = random.Random(7)
    now = timezone.now()
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    User = get_user_model()
    lead = User.objects.create_user("bench-lead", password="bench", first_name="Maria", last_name="Chen")
    Membership.objects.create(tenant=tenant, user=lead, role=Role.LEAD)
    User.objects.create_superuser("bench-admin", password="bench")
    policy = PolicyVersion.objects.create(
        tenant=tenant, number=1, mode="active", thresholds=POLICY.to_data(), created_by="bench"
    )

    say(f"writing {n:,} memories ...")
    origins = SourceEvent.objects.bulk_create(
        [
            SourceEvent(
                tenant=tenant,
                source=source,
                text=f"Origin notes via {source}.",
                text_hash="x" * 64,
                occurred_at=now - timedelta(days=90),
            )
            for source in SOURCES
        ]
    )
    # auto_now would stamp every row with this minute; the lists order by time, so spread it.
    for name in ("updated_at", "created_at"):
        field = Memory._meta.get_field(name)
        field.auto_now = field.auto_now_add = False
    in_review = set(rng.sample(range(n), n // 20))
    dead = ["contradicted", "superseded", "expired", "frozen", "deleted"]
    for start in range(0, n, BATCH):
        rows = []
        for i in range(start, min(n, start + BATCH)):
            status = (
                "needs_review" if i in in_review else ("active" if rng.random() < 0.8 else rng.choice(dead))
            )
            p_true = round(rng.uniform(0.36, 0.64), 3) if status == "needs_review" else round(rng.random(), 3)
            changed = now - timedelta(minutes=rng.randrange(60 * 24 * 60))
            content = f"Memory {i}: customer {i % 5000} prefers option {rng.randrange(100)} for deliveries."
            rows.append(
                Memory(
                    tenant=tenant,
                    source_event=origins[i % len(origins)],
                    channel=origins[i % len(origins)].source,
                    kind=KINDS[i % len(KINDS)],
                    subject=f"subject {i:06d}",
                    content=content,
                    content_hash=content_hash(content),
                    written_by="agent:bench",
                    user_id=f"cust-{i % 5000}",
                    status=status,
                    p_true=p_true,
                    threshold_gap=POLICY.gap(p_true),
                    flagged_at=changed if status == "needs_review" else None,
                    flagged_for=("partial" if i % 7 == 0 else "uncertain")
                    if status == "needs_review"
                    else None,
                    created_at=changed - timedelta(days=30),
                    updated_at=changed,
                    valid_from=changed - timedelta(days=30),
                )
            )
        Memory.objects.bulk_create(rows, batch_size=1000)
    memories = list(
        Memory.objects.for_tenant(tenant).order_by("pk").values_list("pk", "status", "row_version")
    )

    say("writing ten verdicts per memory ...")
    judged_events = SourceEvent.objects.bulk_create(
        [
            SourceEvent(
                tenant=tenant,
                source=SOURCES[k % len(SOURCES)],
                text=f"Weekly digest number {k}.",
                text_hash="y" * 64,
                occurred_at=now - timedelta(days=70 - 7 * k),
            )
            for k in range(10)
        ]
    )
    assessments = Assessment.objects.bulk_create(
        [
            Assessment(
                tenant=tenant,
                purpose="invalidation",
                event=event,
                policy=policy,
                state="done",
                question_set_version="bench",
                model_name="jev-1.13.0",
            )
            for event in judged_events
        ]
    )
    flag_verdict = {}
    for k, (event, assessment) in enumerate(zip(judged_events, assessments, strict=True)):
        for start in range(0, len(memories), BATCH):
            rows = []
            for pk, _, version in memories[start : start + BATCH]:
                votes = {
                    "bears": rng.random(),
                    "still_true": rng.random(),
                    "replaces": rng.random() / 2,
                    "partial": rng.random() / 2,
                    "hypothetical": rng.random() / 5,
                    "directive": rng.random() / 5,
                }
                rows.append(
                    Verdict(
                        tenant=tenant,
                        assessment=assessment,
                        memory_id=pk,
                        event=event,
                        row_version=version,
                        disposition=decide(votes),
                        **votes,
                    )
                )
            created = Verdict.objects.bulk_create(rows, batch_size=1000)
            if k == 9:
                flag_verdict.update({v.memory_id: v.pk for v in created})

    say("writing the queue's flag transitions (hash-chained) ...")
    write_flags(tenant, flag_verdict, judged_events[-1].pk)

    say("writing the heavy memory: 1,000 verdicts, 50 links ...")
    heavy = Memory.objects.for_tenant(tenant).needs_review().order_by("pk").first()
    events = SourceEvent.objects.bulk_create(
        [
            SourceEvent(
                tenant=tenant,
                source=SOURCES[k % len(SOURCES)],
                text=f"Ticket update {k} about the heavy memory.",
                text_hash="z" * 64,
                occurred_at=now - timedelta(hours=1000 - k),
            )
            for k in range(990)
        ]
    )
    small = Assessment.objects.bulk_create(
        [
            Assessment(
                tenant=tenant,
                purpose="invalidation",
                event=e,
                policy=policy,
                state="done",
                question_set_version="bench",
                model_name="jev-1.13.0",
            )
            for e in events
        ]
    )
    Verdict.objects.bulk_create(
        [
            Verdict(
                tenant=tenant,
                assessment=a,
                memory=heavy,
                event=e,
                row_version=2,
                disposition="uncertain",
                bears=0.9,
                still_true=0.4 + 0.2 * rng.random(),
                replaces=0.2,
                partial=0.3,
                hypothetical=0.05,
                directive=0.02,
            )
            for a, e in zip(small, events, strict=True)
        ],
        batch_size=1000,
    )
    neighbours = [pk for pk, _, _ in memories[1:51]]
    MemoryLink.objects.bulk_create(
        [
            MemoryLink(
                tenant=tenant,
                src_id=pk if k % 2 else heavy.pk,
                dst_id=heavy.pk if k % 2 else pk,
                kind=["supports", "refines", "duplicates", "contradicts", "supersedes"][k % 5],
                origin="assessment",
            )
            for k, pk in enumerate(neighbours)
            if pk != heavy.pk
        ]
    )
    say("writing the team: six reviewers, two rules, 200 items given by hand ...")
    team = [
        User.objects.create_user(f"bench-reviewer-{k}", first_name=name, last_name="Reviewer")
        for k, name in enumerate(("Ana", "Ben", "Chloe", "Dev", "Eli", "Fay"))
    ]
    Membership.objects.bulk_create(Membership(tenant=tenant, user=u, role=Role.REVIEWER) for u in team)
    assignment.rule_create(tenant=tenant, to=team[0], by=lead, channel="email")
    assignment.rule_create(tenant=tenant, to=team[1], by=lead, kind="preference", subject="refund")
    waiting = Memory.objects.for_tenant(tenant).needs_review().order_by("pk")
    for k, memory in enumerate(waiting[:200]):
        assignment.assign(memory=memory, to=lead if k % 2 else team[2 + k % 4], by=lead)
    tallies.recount(tenant)  # the rows went in around the writers that keep the counts
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return {"tenant": tenant, "heavy": heavy}


# -- the measurements ----------------------------------------------------------------------------


def measure(client: Client, url: str, repeats: int) -> dict:
    for _ in range(3):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:500])
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    queries = len(captured)  # now: the next request clears the connection's query log
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        client.get(url)
        samples.append((time.perf_counter() - started) * 1000)
    return {
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "queries": queries,
    }


LIST_PAGES = (
    "queue_first", "queue_deep", "queue_filtered", "queue_assigned_mine", "review_flow",
    "memories_all", "memories_by_status", "tenant_home",
)  # fmt: skip


def deep_cursor(tenant: Tenant, position: int) -> str:
    ordering = QUEUE_ORDERS["risk"]
    row = Memory.objects.for_tenant(tenant).needs_review().order_by(*ordering)[position]
    return encode(row, ordering)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards, to look into it")
    parser.add_argument(
        "--reuse", metavar="URL_OR_PATH", help="measure a database kept by BENCH_KEEP=1 instead of building"
    )
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    if args.reuse:
        tenant = Tenant.objects.get(slug="bench")
        heavy = Memory.objects.for_tenant(tenant).needs_review().order_by("pk").first()  # as build() chose
        args.memories = Memory.objects.for_tenant(tenant).count()
    else:
        data = build(args.memories)
        tenant, heavy = data["tenant"], data["heavy"]
    queued = Memory.objects.for_tenant(tenant).needs_review().count()
    say(
        f"{'reused' if args.reuse else 'built'} in {time.perf_counter() - started:.0f} s: "
        f"{args.memories:,} memories, {queued:,} in review, "
        f"{Verdict.objects.count():,} verdicts ({connection.vendor})\n"
    )

    people, admin = Client(), Client()
    users = get_user_model().objects
    people.force_login(users.get(username="bench-lead"))  # the login throttle wants a request
    admin.force_login(users.get(username="bench-admin"))
    deepest = max(0, queued - 10)
    admin_pages = -(-queued // 100)  # the admin shows 100 a page
    same = f"status__exact=needs_review&tenant__id__exact={tenant.pk}"  # the queue's memories
    pages = {
        "queue_first": (people, "/t/bench/review/"),
        "queue_deep": (people, f"/t/bench/review/?after={deep_cursor(tenant, deepest)}"),
        "queue_filtered": (people, "/t/bench/review/?kind=preference&source=email&flagged_for=uncertain"),
        "queue_assigned_mine": (people, "/t/bench/review/?assigned=mine"),
        "review_flow": (people, "/t/bench/review/flow/"),
        "memories_all": (people, "/t/bench/memories/"),
        "memories_by_status": (people, "/t/bench/memories/?status=superseded"),
        "memory_page": (people, f"/t/bench/memories/{heavy.pk}/?hops=2"),
        "tenant_home": (people, "/t/bench/"),
        "review_team": (people, "/t/bench/review/team/"),
        "admin_first": (admin, f"/admin/memories/memory/?{same}"),
        "admin_deep": (admin, f"/admin/memories/memory/?{same}&p={admin_pages}"),
    }
    figures = {}
    say(f"{'page':<20} {'median':>9} {'p95':>9} {'queries':>8}")
    for name, (client, url) in pages.items():
        figures[name] = measure(client, url, args.repeats)
        f = figures[name]
        say(f"{name:<20} {f['median_ms']:>7.1f}ms {f['p95_ms']:>7.1f}ms {f['queries']:>8}")
    ratio = min(
        figures["admin_first"]["median_ms"] / figures["queue_first"]["median_ms"],
        figures["admin_deep"]["median_ms"] / figures["queue_deep"]["median_ms"],
    )
    say(f"\nadmin changelist / review queue (the worse of first and deepest page, medians): {ratio:.1f}x")
    targets = {
        "list pages p95 <= 60 ms (queue, flow, memories, home)": all(
            figures[p]["p95_ms"] <= 60 for p in LIST_PAGES
        ),
        "memory page and team page p95 <= 100 ms": all(
            figures[p]["p95_ms"] <= 100 for p in ("memory_page", "review_team")
        ),
        "at least 2x faster than the admin": ratio >= 2,
    }
    for target, met in targets.items():
        say(f"  {'met' if met else 'NOT MET'}: {target}")
    backend = connection.vendor
    if args.keep:
        say(f"kept: {connection.settings_dict['NAME']}")
    else:
        throwaway.drop()
    print(
        json.dumps(
            {
                "memories": args.memories,
                "backend": backend,
                "in_review": queued,
                "pages": figures,
                "admin_ratio": round(ratio, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
