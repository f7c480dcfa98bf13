"""How an audit export of a large trail streams: time, and memory while it streams.

    .venv/bin/python bench/audit_export.py [--rows 200000] [--postgres URL]

Writes N transitions for one tenant (hash-chained as the application would, in bulk), then reads
the JSONL export through the view, chunk by chunk, without keeping it, and reports the time, the
bytes, and the largest Python allocation in flight (tracemalloc) beside the size of the export:
a streamed export's peak stays flat as N grows, a buffered one would grow with it.
"""

import argparse
import json
import time
import tracemalloc

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from memory_review.tenancy.models import Membership, Role, Tenant  # noqa: E402
from tests.factories import long_trail  # noqa: E402  (the trail as the chain writes it, in bulk)


def build(rows: int) -> None:
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    user = get_user_model().objects.create_user("bench-auditor", password="bench")
    Membership.objects.create(tenant=tenant, user=user, role=Role.AUDITOR)
    long_trail(tenant, rows)


def stream() -> dict:
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-auditor"))  # no login throttle
    tracemalloc.start()
    started = time.perf_counter()
    response = client.get("/t/bench/audit/export.jsonl")
    size = lines = 0
    for chunk in response.streaming_content:
        size += len(chunk)
        lines += chunk.count(b"\n")
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": seconds, "bytes": size, "lines": lines, "peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--postgres", metavar="URL")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    build(args.rows)
    print(f"{args.rows:,} transitions written in {time.perf_counter() - started:.0f} s")
    result = stream()
    rows = result["lines"] - 1
    print(f"JSONL export: {rows:,} rows, {result['bytes'] / 2**20:.1f} MiB in {result['seconds']:.1f} s")
    print(f"  {rows / result['seconds']:,.0f} rows/s (tracemalloc on: slower than without)")
    print(f"  peak Python memory while streaming: {result['peak'] / 2**20:.1f} MiB")
    throwaway.drop()
    figures = {
        "rows": rows, "mib": round(result["bytes"] / 2**20, 1), "seconds": round(result["seconds"], 2),
        "peak_mib": round(result["peak"] / 2**20, 1),
    }  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
