"""How long a labeler waits between two items (review/views/labels.py): recording a label and
drawing the next item, with progress, through the real view, over N stored verdicts.

    .venv/bin/python bench/labeling.py [--verdicts 200000] [--labels 60] [--postgres URL]

Fills a throwaway database with N verdicts of random votes (bench/stored_replay.py's filler),
then has one labeler label `--labels` items through the htmx panel (POST record, which answers
with the next item), after a second labeler has labeled some so second opinions come first.
Prints the median and p95 of a label's round trip, per phase of the stream, and last one JSON
object with them.
"""

import argparse
import json
import re
import statistics
import time

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from stored_replay import fill  # noqa: E402

from memory_review.assessments.policy import DEFAULTS  # noqa: E402
from memory_review.calibration import labeling  # noqa: E402
from memory_review.tenancy.models import Role, Tenant  # noqa: E402
from tests.factories import make_user  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=200_000)
    parser.add_argument("--labels", type=int, default=60)
    parser.add_argument("--postgres", metavar="URL")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver"]
    call_command("migrate", verbosity=0)
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    started = time.perf_counter()
    fill(tenant, args.verdicts)
    filled = time.perf_counter() - started
    first, second = make_user("first", tenant, Role.LABELER), make_user("second", tenant, Role.LABELER)
    for _ in range(args.labels // 3):  # items waiting for a second opinion
        item = labeling.next_item(tenant, first, "verdict", policy=DEFAULTS)
        labeling.record(tenant, first, item, outcome="confirmed")

    client = Client()
    client.force_login(second)
    page = client.get("/t/bench/labels/")
    item = re.search(r'data-item="(v\d+)"', page.content.decode()).group(1)
    times = []
    for _ in range(args.labels):
        started = time.perf_counter()
        answer = client.post(
            "/t/bench/labels/record/", {"item": item, "outcome": "uncertain"}, HTTP_HX_REQUEST="true"
        )
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, answer.content[:300]
        item = re.search(r'data-item="(v\d+)"', answer.content.decode()).group(1)
    second_opinions, rest = times[: args.labels // 3], times[args.labels // 3 :]
    figures = {
        "verdicts": args.verdicts,
        "labels": args.labels,
        "median_ms": round(statistics.median(times)),
        "p95_ms": round(percentile(times, 0.95)),
        "second_opinion_median_ms": round(statistics.median(second_opinions)),
        "near_and_bins_median_ms": round(statistics.median(rest)),
        "fill_s": round(filled),
        "database": "postgresql" if args.postgres else "sqlite",
    }
    print(
        f"{args.verdicts} stored verdicts (filled in {filled:.0f} s); {args.labels} labels through the view"
    )
    print(
        f"label + next item: median {figures['median_ms']} ms, p95 {figures['p95_ms']} ms "
        f"(second opinions {figures['second_opinion_median_ms']} ms, then new items "
        f"{figures['near_and_bins_median_ms']} ms)"
    )
    print(json.dumps(figures))
    throwaway.drop()


if __name__ == "__main__":
    main()
