"""A candidate policy replayed over a tenant's stored votes, beside the active one
(calibration/stored.py): how long for N verdicts, streamed.

    .venv/bin/python bench/stored_replay.py [--verdicts 2000000] [--postgres URL]

Fills a throwaway database with N verdicts of random votes (one event and assessment per
10,000 verdicts, 20,000 memories), then replays them twice (the second run warm). Prints the
times, verdicts per second, peak memory, and last one JSON object with them.
"""

import argparse
import json
import random
import resource
import time

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

from dataclasses import replace  # noqa: E402

from django.core.management import call_command  # noqa: E402

from memory_review.assessments.models import Assessment, Verdict  # noqa: E402
from memory_review.assessments.policy import DEFAULTS  # noqa: E402
from memory_review.assessments.services import policy_ensure_default  # noqa: E402
from memory_review.calibration.stored import replay_stored  # noqa: E402
from memory_review.memories.models import Memory, content_hash  # noqa: E402
from memory_review.memories.services import event_record  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402


def fill(tenant: Tenant, n: int) -> None:
    policy = policy_ensure_default(tenant=tenant, created_by="bench")
    event = event_record(tenant=tenant, source="chat", text="Bench evidence.")
    memories = Memory.objects.bulk_create(
        [
            Memory(tenant=tenant, source_event=event, kind="fact", subject=f"s{i}", content=f"Fact {i}.",
                   content_hash=content_hash(f"Fact {i}."), written_by="bench", user_id=f"u{i}")
            for i in range(20_000)
        ],
        batch_size=5000,
    )  # fmt: skip
    rng = random.Random(3)
    for start in range(0, n, 10_000):  # an event judges 10,000 memories, each once
        event = event_record(tenant=tenant, source="chat", text=f"Bench evidence {start}.")
        assessment = Assessment.objects.create(
            tenant=tenant, purpose="invalidation", policy=policy, question_set_version="bench", state="done"
        )
        rows = []
        for memory in rng.sample(memories, min(10_000, n - start)):
            votes = {name: round(rng.random(), 3) for name in Verdict.VOTE_NAMES}
            rows.append(
                Verdict(tenant=tenant, assessment=assessment, memory=memory, event=event,
                        row_version=1, disposition="uncertain", **votes)
            )  # fmt: skip
        Verdict.objects.bulk_create(rows, batch_size=5000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=2_000_000)
    parser.add_argument("--postgres", metavar="URL")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    started = time.perf_counter()
    fill(tenant, args.verdicts)
    filled = time.perf_counter() - started
    candidate = replace(DEFAULTS, confirm_min=0.65, contradict_max=0.35)
    times = []
    for _ in range(2):
        started = time.perf_counter()
        result = replay_stored(tenant, active=DEFAULTS, candidate=candidate)
        times.append(time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {
        "verdicts": result.verdicts,
        "changed": result.changed,
        "runs_s": [round(t, 1) for t in times],
        "verdicts_per_s": round(result.verdicts / min(times)),
        "peak_rss_mib": round(peak),
        "fill_s": round(filled),
    }
    print(f"{result.verdicts} stored verdicts (filled in {filled:.0f} s); {result.changed} would change")
    runs = ", ".join(f"{t:.1f} s" for t in times)
    print(f"replay: {runs}; {figures['verdicts_per_s']} verdicts/s; peak {peak:.0f} MiB")
    print(json.dumps(figures))
    throwaway.drop()


if __name__ == "__main__":
    main()
