"""The agent loop's reads and writes at size (issue 16): what is in force for one user's scope,
usage receipts accepted per second, and how soon a long poll hears a decision.

One tenant of N memories (default 200,000): 10,000 customers with about 20 memories each (some in
a thread), 200 tenant-wide, 5% in review, 3% frozen, 7% out of force (contradicted, superseded,
expired, forgotten), one in fifty past its hard TTL without the sweep having run; and, beside it,
a second tenant of the same size (the in-force read must not read it).

* **in force**: `GET memories?user_id=<a random customer>` in-process through Django's test client
  (middleware, token, view, queries, JSON), beside the same rows read by one hand-written SQL
  query (the floor), and its queries counted;
* **receipts**: over HTTP to this checkout's `runserver`, batches of 1 and of 100 responses
  (each response naming 3 memories), from 4 client threads; the API's rate limit is off for the
  run (it is a per-token guard, not the server's capacity);
* **long poll**: a client holds `GET changes?wait=30` open over HTTP while this process forgets
  a memory every 0.3 s; from the commit to the answer in the client's hands.

    .venv/bin/python bench/agent_loop.py [--memories 200000] [--repeats 200] [--postgres URL]

The last line is one JSON object with every figure.
"""

import argparse
import json
import os
import random
import statistics
import threading
import time
from datetime import timedelta

os.environ["API_RATE_PER_MINUTE"] = "0"  # before settings load: the served process inherits it

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

import httpx  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory_review.agents.models import Receipt  # noqa: E402
from memory_review.integrity.context import acting_as  # noqa: E402
from memory_review.integrity.db_context import tenant_context  # noqa: E402
from memory_review.lifecycle import Actor  # noqa: E402
from memory_review.memories.models import LIVE_STATUSES, Memory, SourceEvent, content_hash  # noqa: E402
from memory_review.memories.services import memory_forget  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402
from memory_review.tenancy.tokens import token_create  # noqa: E402

BATCH = 5000
CUSTOMERS = 10_000
TENANT_WIDE = 200


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def figures(samples: list[float]) -> dict:
    return {"median_ms": round(statistics.median(samples), 2), "p95_ms": round(percentile(samples, 95), 2)}


def say(message: str) -> None:
    print(message, flush=True)


def build(slug: str, n: int) -> Tenant:
    rng = random.Random(slug)
    now = timezone.now()
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    origin = SourceEvent.objects.create(
        tenant=tenant, source="chat", text="Origin notes.", text_hash="x" * 64, occurred_at=now
    )
    for start in range(0, n, BATCH):
        rows = []
        for i in range(start, min(n, start + BATCH)):
            draw = rng.random()
            status = (
                "needs_review" if draw < 0.05 else "frozen" if draw < 0.08 else
                rng.choice(["contradicted", "superseded", "expired", "deleted"]) if draw < 0.15 else "active"
            )  # fmt: skip
            wide = i < TENANT_WIDE
            customer = None if wide else f"cust-{i % CUSTOMERS}"
            content = f"Memory {i}: {customer or 'everyone'} prefers option {rng.randrange(100)}."
            rows.append(
                Memory(
                    tenant=tenant,
                    source_event=origin,
                    channel="chat",
                    kind=("fact", "preference", "decision", "exception")[i % 4],
                    subject=f"subject {i:07d}",
                    content=content,
                    content_hash=content_hash(content),
                    written_by="agent:bench",
                    user_id=customer,
                    thread_id=f"t-{i % 3}" if customer and i % 5 == 0 else None,
                    status=status,
                    valid_until=now - timedelta(hours=1) if i % 50 == 7 else None,
                    valid_from=now - timedelta(days=30),
                )
            )
        Memory.objects.bulk_create(rows, batch_size=1000)
    return tenant


# -- in force ------------------------------------------------------------------------------------

FLOOR = """
SELECT id, version, content, kind, subject, user_id, agent_id, thread_id, status, valid_until
  FROM memories_memory
 WHERE tenant_id = %s AND (user_id = %s OR user_id IS NULL) AND agent_id IS NULL AND thread_id IS NULL
   AND status IN ('active', 'needs_review', 'frozen') AND deleted_at IS NULL
   AND valid_from <= %s AND (valid_until IS NULL OR valid_until > %s)
 ORDER BY id LIMIT 101
"""


def in_force(tenant: Tenant, token: str, repeats: int) -> dict:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    rng = random.Random(3)
    customers = [f"cust-{rng.randrange(CUSTOMERS)}" for _ in range(repeats)]
    for customer in customers[:5]:
        assert client.get(f"/api/v1/t/{tenant.slug}/memories?user_id={customer}").status_code == 200
    with CaptureQueriesContext(connection) as captured:
        answer = client.get(f"/api/v1/t/{tenant.slug}/memories?user_id={customers[0]}")
    queries = len(captured)  # now: the next request clears the connection's query log
    held = answer.json()["memories"]
    expected = Memory.objects.for_tenant(tenant).for_scope(
        user_id=customers[0], agent_id=None, thread_id=None
    )
    now = timezone.now()
    expected = expected.filter(status__in=LIVE_STATUSES, valid_from__lte=now).exclude(valid_until__lte=now)
    assert [m["id"] for m in held] == list(expected.order_by("pk").values_list("pk", flat=True)[:100])
    api, floor = [], []
    with connection.cursor() as cursor:
        for customer in customers:
            started = time.perf_counter()
            client.get(f"/api/v1/t/{tenant.slug}/memories?user_id={customer}")
            api.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            cursor.execute(FLOOR, [tenant.pk, customer, now, now])
            cursor.fetchall()
            floor.append((time.perf_counter() - started) * 1000)
    return {
        "memories_returned": len(held),
        "queries": queries,
        "api": figures(api),
        "floor_sql": figures(floor),
        "ratio_p95": round(percentile(api, 95) / max(percentile(floor, 95), 0.01), 1),
    }


# -- receipts ------------------------------------------------------------------------------------


def receipts(base: str, tenant: Tenant, token: str, *, batch: int, posts_per_thread: int) -> dict:
    ids = list(Memory.objects.for_tenant(tenant).filter(status="active").values_list("pk", "version")[:3000])
    before = Receipt.objects.filter(tenant=tenant).count()

    def body(rng: random.Random, n: int) -> dict:
        used = rng.sample(ids, 3)
        return {
            "responses": [
                {
                    "response_id": f"r-{rng.getrandbits(48):x}",
                    "used_at": timezone.now().isoformat(),
                    "scope": {"user_id": f"cust-{n % CUSTOMERS}", "thread_id": "t-1"},
                    "memories": [{"id": pk, "version": version} for pk, version in used],
                }
                for _ in range(batch)
            ]
        }

    latencies: list[float] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        rng = random.Random(f"{batch}-{k}")  # a response sent again is written once: new ids each run
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            for n in range(posts_per_thread):
                payload = body(rng, n)
                started = time.perf_counter()
                answer = http.post(f"/api/v1/t/{tenant.slug}/receipts", json=payload)
                took = (time.perf_counter() - started) * 1000
                assert answer.status_code == 201, answer.text
                with lock:
                    latencies.append(took)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    written = Receipt.objects.filter(tenant=tenant).count() - before  # rows: 3 per response
    responses = 4 * posts_per_thread * batch
    assert written == responses * 3, (written, responses)
    return {
        "batch": batch,
        "responses": responses,
        "rows": written,
        "responses_per_s": round(responses / seconds),
        "rows_per_s": round(written / seconds),
        "post": figures(latencies),
    }


# -- long poll -----------------------------------------------------------------------------------


def long_poll(base: str, tenant: Tenant, token: str, decisions: int) -> dict:
    heard: dict[int, float] = {}
    from memory_review.agents import feed

    cursor = feed.head(tenant)
    stop = threading.Event()

    def follow() -> None:
        nonlocal cursor
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=40) as http:
            while not stop.is_set():
                try:
                    page = http.get(
                        f"/api/v1/t/{tenant.slug}/changes", params={"after": cursor, "wait": 5}
                    ).json()
                except httpx.HTTPError:
                    return  # the server stopped at the end of the run
                now = time.perf_counter()
                for change in page["changes"]:
                    heard.setdefault(change["memory_id"], now)
                cursor = page["cursor"]

    listener = threading.Thread(target=follow, daemon=True)
    listener.start()
    time.sleep(1)
    active = Memory.objects.for_tenant(tenant).filter(status="active").order_by("pk")
    skip = min(1000, active.count() // 2)  # past the ones the receipts named
    victims = list(active[skip : skip + decisions])
    committed: dict[int, float] = {}
    with tenant_context(tenant.pk), acting_as("user:1"):
        for memory in victims:
            memory_forget(
                memory=memory, actor=Actor("user", "1"), reason="asked", seen_version=memory.row_version
            )
            committed[memory.pk] = time.perf_counter()
            time.sleep(0.3)
    deadline = time.monotonic() + 10
    while len(heard) < len(victims) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    lags = [(heard[pk] - committed[pk]) * 1000 for pk in committed if pk in heard]
    return {"decisions": len(victims), "heard": len(lags), **figures(lags)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--posts", type=int, default=250, help="receipt POSTs per client, one response each")
    parser.add_argument("--decisions", type=int, default=50, help="forgets the long poll must hear")
    parser.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    say(f"writing two tenants of {args.memories:,} memories ...")
    tenant = build("bench", args.memories)
    build("other", args.memories)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    say(f"built in {time.perf_counter() - started:.0f} s ({connection.vendor})\n")
    token = token_create(tenant=tenant, name="bench-agent")[1]
    out = {"database": connection.vendor, "memories_per_tenant": args.memories}

    out["in_force"] = in_force(tenant, token, args.repeats)
    f = out["in_force"]
    say(
        f"in force for one customer ({f['memories_returned']} memories, {f['queries']} queries): "
        f"median {f['api']['median_ms']} ms, p95 {f['api']['p95_ms']} ms; the same rows by one SQL query: "
        f"p95 {f['floor_sql']['p95_ms']} ms ({f['ratio_p95']}x)"
    )
    base, server = throwaway.serve()
    try:
        for batch, posts in ((1, args.posts), (100, max(1, args.posts // 25))):
            r = receipts(base, tenant, token, batch=batch, posts_per_thread=posts)
            out[f"receipts_batch_{batch}"] = r
            say(
                f"receipts, {batch} a POST from 4 clients: {r['responses_per_s']:,} responses/s "
                f"({r['rows_per_s']:,} rows/s); POST median {r['post']['median_ms']} ms, "
                f"p95 {r['post']['p95_ms']} ms"
            )
        out["long_poll"] = lp = long_poll(base, tenant, token, args.decisions)
        say(
            f"decision to long-poll answer ({lp['heard']}/{lp['decisions']} heard): "
            f"median {lp['median_ms']} ms, p95 {lp['p95_ms']} ms"
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
        throwaway.drop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
