"""How long a threshold sweep takes: 50,000 labelled cases, the default grid (every threshold
of the invalidation table and the margin), three runs.

    .venv/bin/python bench/calibration.py [--cases 50000] [--runs 3]

Prints the grid's size, each run's time, the median, the peak memory, and last one JSON object
with them. The cases are synthetic: votes drawn around each label's typical pattern, labels
mostly what the default policy says, with a share of disagreements, as a labelled set has.
"""

import argparse
import json
import random
import resource
import statistics
import time

import django  # noqa: E402
import throwaway  # noqa: E402, F401, I001  (before Django: its keys and settings; no table is read)

django.setup()

from memory_review.assessments.policy import DEFAULTS  # noqa: E402
from memory_review.calibration.replay import Case, replay  # noqa: E402
from memory_review.calibration.sweep import sweep  # noqa: E402

VOTES = ("bears", "still_true", "replaces", "partial", "hypothetical", "directive")
LABELS = ("confirmed", "uncertain", "contradicted", "superseded", "partial", "unrelated")


def labelled(n: int, seed: int = 11) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        votes = {name: min(1.0, max(0.0, rng.betavariate(2, 2))) for name in VOTES}
        votes["hypothetical"] *= 0.6
        votes["directive"] *= 0.6
        cases.append(Case(id=f"c{i}", votes=votes, expected="uncertain"))
    # Labels: what the default policy says, with one in six replaced by another label.
    said = replay(cases, DEFAULTS).results
    return [
        Case(id=c.id, votes=c.votes, expected=rng.choice(LABELS) if rng.random() < 1 / 6 else r.disposition)
        for c, r in zip(cases, said, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cases = labelled(args.cases)
    times, result = [], None
    for _ in range(args.runs):
        started = time.perf_counter()
        result = sweep(cases, DEFAULTS)
        times.append(time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {
        "cases": args.cases,
        "combinations": result.combinations,
        "runs_s": [round(t, 2) for t in times],
        "median_s": round(statistics.median(times), 2),
        "peak_rss_mib": round(peak),
        "baseline": {k: v for k, v in result.baseline.to_dict().items() if k != "n"},
        "best": {k: v for k, v in result.best.to_dict().items() if k != "n"},
    }
    print(f"{args.cases} labelled cases, {result.combinations} policies in the grid")
    runs = ", ".join(f"{t:.2f} s" for t in times)
    print(f"runs: {runs}; median {figures['median_s']} s; peak RSS {peak:.0f} MiB")
    print(f"default policy: {figures['baseline']}")
    print(f"best adding no false invalidation: {figures['best']}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
