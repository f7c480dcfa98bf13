"""The memory health page right after a label (issue 31), against a database bench/pages.py kept,
or one it builds the same way (`--memories`, two tenants; SQLite unless `--postgres`).

    .venv/bin/python bench/health_after_label.py --reuse postgres://postgres@127.0.0.1:5432/bench_NNNN

bench/pages.py times thirty views with no label between them, so each is served from what the
cache keeps. A tenant whose labelers are at work moves a stratum's figures with every label: for
each bench tenant this times a view, then gives a real label (committed) on the newest sample of
each population in turn and times the view after it, ten times, in-process. The cache is Redis,
as shipped (a database of the run's own). It writes labels into the kept database. The last line
is one JSON object."""

import argparse
import itertools
import json
import os
import statistics
import time

import redis
import redis_db

os.environ["CACHE_URL"] = redis_db.free_redis_database()  # before settings load: Redis, as shipped
os.environ["CACHE_KEY_PREFIX"] = f"bench-health-{os.getpid()}"

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

import pages  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from memory_review.quality import results  # noqa: E402
from memory_review.quality.models import AuditItem, AuditSample  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402

ROUNDS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200_000, help="a tenant, when it builds")
    parser.add_argument("--postgres", metavar="URL", help="build on this server, not SQLite")
    parser.add_argument("--reuse", metavar="URL_OR_PATH", help="a database bench/pages.py --keep kept")
    args = parser.parse_args()
    try:
        if not args.reuse:
            call_command("migrate", verbosity=0)
            pages.build(args.memories, 2)
        timed()
    finally:
        redis.Redis.from_url(os.environ["CACHE_URL"]).flushdb()  # the cache, and the run's hold on it
        throwaway.drop()


def timed() -> None:
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-lead"))
    labeler = get_user_model().objects.get(username="bench-labeler-1")
    found = {}
    for tenant in Tenant.objects.filter(slug__startswith="bench").order_by("pk"):
        url = f"/t/{tenant.slug}/health/"
        for _ in range(3):
            assert client.get(url).status_code == 200
        waiting = []
        for population in ("unreviewed", "decisions"):
            newest = AuditSample.objects.filter(tenant=tenant, population=population).order_by("-drawn_at")[0]
            unlabeled = AuditItem.objects.filter(sample=newest).exclude(labels__labeler=labeler)
            waiting.append(list(unlabeled.order_by("pk")[: ROUNDS // 2]))
        before, after = [], []
        for item in [item for pair in itertools.zip_longest(*waiting) for item in pair if item]:
            began = time.perf_counter()
            client.get(url)
            before.append((time.perf_counter() - began) * 1000)
            results.label_record(item=item, labeler=labeler, outcome="true")
            began = time.perf_counter()
            client.get(url)
            after.append((time.perf_counter() - began) * 1000)
        found[tenant.slug] = {
            "no_label_between_ms": [round(statistics.median(before)), round(max(before))],
            "right_after_a_label_ms": [round(statistics.median(after)), round(max(after))],
        }
        quiet, moved = found[tenant.slug].values()
        print(
            f"{tenant.slug}: no label between, median {quiet[0]} ms (max {quiet[1]}); "
            f"right after a label, median {moved[0]} ms (max {moved[1]})"
        )
    print(json.dumps(found))


if __name__ == "__main__":
    main()
