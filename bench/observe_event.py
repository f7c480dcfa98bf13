"""How long observing one event takes, against pools of 20 to 2,000 candidate memories.

The stand-in answers at a fixed latency (150 ms by default), so wall time divided by one
request's latency says how well batching, screening and concurrency hide the round trips.
Each size runs twice side by side: concurrent batches (as shipped) and a baseline that sends
the same requests one after another (JEV_MAX_CONCURRENCY=1).

    .venv/bin/python bench/observe_event.py [--latency-ms 150] [--events 5] [--postgres URL] [--phases]

On PostgreSQL it also prints the WAL an event wrote (median KiB, the lease to the finish): its
rows and every index entry they made, a figure without a clock's noise (the server's log: run it
where nothing else writes).

`--phases` also times each phase of an event (the lease, the candidates read and checked, Jev,
the votes' INSERT with their seals, the memories' checks, the rest of the recording with its
COMMIT, the moves, the finish) by wrapping the pipeline's functions with timers, and prints the
medians: by the clock, and by this process's CPU (every thread's: Jev's includes the request
threads'). CPU figures are read against the machine's speed, timed at the start and the end
(bench/machine.py: a bare loop's seconds, the load).

It runs the pipeline in-process (no Celery hop) on a throwaway SQLite database, or with
`--postgres postgres://postgres@127.0.0.1:5432` on a throwaway PostgreSQL database, as the
worker's task runs it: in the tenant's database context, its lease taken first, and with the
audit rows left for the sequencer (AUDIT_SEQUENCER=deferred, as shipped). The sequencer's run that
links them is made after each event, as a worker would make it 200 ms later, and timed on its own
("linked after"), not in the event's time. With AUDIT_SEQUENCER=inline in the environment, each
write links its own rows under the tenant's head, in the event's time.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from contextlib import nullcontext

# As shipped: writers leave their audit rows to the sequencer (throwaway's own default is inline).
os.environ.setdefault("AUDIT_SEQUENCER", "deferred")

import django  # noqa: E402
import machine  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from memory_review.assessments import invalidation  # noqa: E402
from memory_review.assessments.invalidation import observe_event, run_invalidation  # noqa: E402
from memory_review.assessments.jev import Jev, noul  # noqa: E402
from memory_review.assessments.leases import claim  # noqa: E402
from memory_review.assessments.models import Verdict  # noqa: E402
from memory_review.assessments.services import policy_ensure_default  # noqa: E402
from memory_review.audit import sequencer  # noqa: E402
from memory_review.integrity import heads  # noqa: E402
from memory_review.integrity.db_context import tenant_context  # noqa: E402
from memory_review.memories.models import Memory, content_hash  # noqa: E402
from memory_review.memories.services import event_record  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402

SIZES = (20, 100, 400, 2000)
# Distinct words, so that an event shares vocabulary with a handful of memories, not all.
WORDS = (
    "amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon marble nectar "
    "obsidian pepper quartz raven saffron tundra umber velvet willow xenon yarrow zephyr anchor "
    "beacon canyon dune estuary falcon glacier heron island jasper kestrel lantern meadow nimbus "
    "orchid prairie quill reef summit thistle upland valley wharf yonder acorn bramble cobalt "
    "dahlia egret fern granite hazel iris jade lichen maple nettle opal plover quince rowan sorrel"
).split()


def words_for(n: int) -> list[str]:
    """Four words no other memory uses (the stand-in compares six-letter stems, so the
    memory's number leads)."""
    return [f"m{n:05d}{WORDS[(n + 17 * k) % len(WORDS)]}" for k in range(4)]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def pool(tenant: Tenant, size: int, mode: str) -> str:
    """`size` memories in one user's scope, only a few of which any one event bears on."""
    user = f"bench-{size}-{mode}"
    event = event_record(tenant=tenant, source="crm", text=f"Account notes for {user}.", user_id=user)
    rows = []
    for n in range(size):
        a, b, c, d = words_for(n)
        content = f"{a.title()} {b} {c} {d}."
        rows.append(
            Memory(
                tenant=tenant, source_event=event, kind="fact", subject=f"parts-{n}", content=content,
                content_hash=content_hash(content), written_by="bench", user_id=user,
            )
        )  # fmt: skip
    Memory.objects.bulk_create(rows, batch_size=500)
    return user


def linked(ms: float | None) -> str:
    return f"{'-':>12}" if ms is None else f"{ms:>10.1f}ms"


def one_request_ms(jev: Jev, repeats: int = 5) -> float:
    state = {"event": {"text": "ping", "source": "chat"}, "memories": [{"fact": "pong", "kind": "fact"}]}
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        jev.ask(state, {"bears_0": noul("bears_0", "Is `event.text` about `memories[0].fact`?", "", "")})
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


class Phases:
    """Where an event's time goes (--phases): each of the pipeline's steps wrapped with a timer,
    as `invalidation`'s module names them (it calls them by those names), for as long as the
    block lasts. Each event's figures are one dict of milliseconds; the recording's rest (the
    verdicts' rows, the assessment's figures, the held seals' INSERT, the COMMIT) and the finish
    are what their enclosing step took beyond the steps timed inside it."""

    STEPS = (
        ("judged", "candidates"), ("code_checks", "candidates"), ("_record_checks", "checks"),
        ("_judge_and_record", "recording"), ("apply_verdicts", "moves"),
    )  # fmt: skip

    def __init__(self):
        self.events: list[dict[str, float]] = []
        self.cpu_events: list[dict[str, float]] = []
        self.now: dict[str, float] = {}
        self.cpu_now: dict[str, float] = {}

    def __enter__(self) -> "Phases":
        self.kept = [(invalidation, name, getattr(invalidation, name)) for name, _ in self.STEPS]
        self.kept.append((invalidation.Gathering, "run", invalidation.Gathering.run))
        for name, phase in self.STEPS:
            setattr(invalidation, name, self._timed(getattr(invalidation, name), phase))
        invalidation.Gathering.run = self._timed(invalidation.Gathering.run, "Jev")
        # The manager's method, as the recording calls it, shadowed on the one manager instance.
        Verdict.objects.insert_values = self._timed(Verdict.objects.insert_values, "votes")
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original in self.kept:
            setattr(owner, name, original)
        del Verdict.objects.insert_values  # the class's own method shows through again

    def _timed(self, function, phase: str):
        def timed(*args, **kwargs):
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.now[phase] = self.now.get(phase, 0.0) + (time.perf_counter() - started) * 1000
                self.cpu_now[phase] = self.cpu_now.get(phase, 0.0) + (time.process_time() - cpu) * 1000

        return timed

    def event(self, lease_ms: float, wall_ms: float, lease_cpu_ms: float, cpu_ms: float) -> None:
        """One event's phases, from what its steps took, by the clock and by the CPU."""
        self.events.append(self._split(self.now, lease_ms, wall_ms))
        self.cpu_events.append(self._split(self.cpu_now, lease_cpu_ms, cpu_ms))
        self.now, self.cpu_now = {}, {}

    @staticmethod
    def _split(took: dict[str, float], lease_ms: float, whole_ms: float) -> dict[str, float]:
        """The phases of one event by one clock (the wall's or the CPU's): `whole_ms` its whole."""
        inside = sum(took.get(p, 0.0) for p in ("candidates", "Jev", "votes", "checks"))
        return {
            "lease": lease_ms, "candidates": took.get("candidates", 0.0), "Jev": took.get("Jev", 0.0),
            "votes": took.get("votes", 0.0), "checks": took.get("checks", 0.0),
            "recording_rest": took.get("recording", 0.0) - inside, "moves": took.get("moves", 0.0),
            "finish_rest": whole_ms - lease_ms - took.get("recording", 0.0) - took.get("moves", 0.0),
            "all": whole_ms,
        }  # fmt: skip

    def medians(self, cpu: bool = False) -> dict[str, float]:
        events = self.cpu_events if cpu else self.events
        return {phase: round(statistics.median(e[phase] for e in events), 1) for phase in events[0]}


PHASE_WORDS = {
    "lease": "lease", "candidates": "candidates", "Jev": "Jev", "votes": "votes' INSERT and seals",
    "checks": "memories' checks", "moves": "moves", "finish_rest": "finish",
    "recording_rest": "rest of recording (verdict rows, figures, held seals, COMMIT)", "all": "in all",
}  # fmt: skip


def wal_position() -> int | None:
    """PostgreSQL's WAL insert position in bytes (None elsewhere): what an event wrote to the log,
    its rows and every index entry they made, measured without a clock's noise. The position is
    the server's, so what anything else writes meanwhile counts too: run it on a quiet server."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')")
        return int(cursor.fetchone()[0])


def run(tenant: Tenant, user: str, size: int, events: int, jev: Jev, phases: Phases | None = None) -> dict:
    walls, linking, requests, tokens, costs, verdicts, wal = [], [], [], [], [], [], []
    for n in range(events):
        a, b, c, _ = words_for(n * 3)
        text = f"{a.title()} {b} {c} now changed to {WORDS[n]} instead."
        event = event_record(tenant=tenant, source="email", text=text, user_id=user)
        assessment = observe_event(event=event, enqueue=lambda a: None)
        with tenant_context(tenant.pk):  # the task's body (assessments/tasks.py), with the bench's client
            logged = wal_position()
            started, cpu = time.perf_counter(), time.process_time()
            claimed = claim(tenant_id=tenant.pk, assessment_id=assessment.pk)
            leased, leased_cpu = time.perf_counter(), time.process_time()
            done = run_invalidation(assessment.pk, tenant_id=tenant.pk, jev=jev, claimed=claimed)
            walls.append((time.perf_counter() - started) * 1000)
            cpu_ms = (time.process_time() - cpu) * 1000
            if logged is not None:
                wal.append(wal_position() - logged)
            if phases is not None:
                phases.event((leased - started) * 1000, walls[-1], (leased_cpu - cpu) * 1000, cpu_ms)
            if not heads.links_inline():  # the run a worker would make next (its flag cleared)
                started = time.perf_counter()
                sequencer.run(tenant.pk, wait=True, queued=True)
                linking.append((time.perf_counter() - started) * 1000)
                assert not sequencer.waiting(tenant.pk), "the sequencer left rows waiting"
        assert done.state == "done", done.error
        requests.append(done.requests)
        tokens.append(done.input_tokens)
        costs.append(float(done.cost_usd))
        verdicts.append(Verdict.objects.filter(assessment=done).count())
    return {
        "median_ms": statistics.median(walls),
        "p95_ms": percentile(walls, 95),
        "linked_after_ms": statistics.median(linking) if linking else None,
        "requests": statistics.mean(requests),
        "tokens": statistics.mean(tokens),
        "cost": statistics.mean(costs),
        "verdicts_per_s": sum(verdicts) / (sum(walls) / 1000),
        "wal_kib": statistics.median(wal) / 1024 if wal else None,
        **({"phases_ms": phases.medians()} if phases is not None else {}),
        **({"phases_cpu_ms": phases.medians(cpu=True)} if phases is not None else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=150)
    parser.add_argument("--events", type=int, default=5)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--phases", action="store_true", help="also time each phase of an event (medians)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    policy_ensure_default(tenant=tenant, created_by="bench")

    # The stand-in runs in its own process, so its work does not compete with the pipeline's.
    port = throwaway.free_port()
    standin = subprocess.Popen(
        [
            sys.executable,
            str(throwaway.ROOT / "manage.py"),
            "jev_standin",
            "--port",
            str(port),
            "--latency-ms",
            str(args.latency_ms),
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        throwaway.wait_for_port(port, "the stand-in")

        def client(concurrency: int) -> Jev:
            return Jev(
                api_key="bench", base_url=url, model="jev-1.13.0", timeout_s=30, max_tries=1,
                backoff_s=0, backoff_max_s=0, max_concurrency=concurrency, requests_per_minute=1200,
            )  # fmt: skip

        speed = {"before": machine.speed()}
        print(f"this machine: {machine.describe(speed['before'])}")
        single = one_request_ms(client(1))
        print(f"stand-in latency {args.latency_ms:.0f} ms; one request end to end: {single:.0f} ms (median)")
        print(f"{args.events} events per size; ratios are wall time per event / one request")
        print(
            f"audit rows: AUDIT_SEQUENCER={settings.AUDIT_SEQUENCER}"
            + (
                " (linked by the sequencer's run after each event: `linked after`, not in its time)\n"
                if settings.AUDIT_SEQUENCER == "deferred"
                else " (each write links its own, in the event's time)\n"
            )
        )
        header = (
            f"{'candidates':>10} {'mode':>10} {'median':>8} {'p95':>8} {'ratio':>6} {'requests':>8} "
            f"{'tokens':>8} {'cost $':>10} {'verdicts/s':>10} {'linked after':>12} {'WAL KiB':>8}"
        )
        print(header)
        print("-" * len(header))
        figures = {
            "latency_ms": args.latency_ms,
            "one_request_ms": round(single),
            "audit_sequencer": settings.AUDIT_SEQUENCER,
            "machine": speed,
            "runs": [],
        }
        for size in map(int, args.sizes.split(",")):
            for mode, concurrency in (("concurrent", settings.JEV_MAX_CONCURRENCY), ("baseline", 1)):
                user = pool(tenant, size, mode)  # a fresh pool: the events kill what they bear on
                timing = Phases() if args.phases and mode == "concurrent" else None
                with override_settings(JEV_MAX_CONCURRENCY=concurrency), timing or nullcontext():
                    r = run(tenant, user, size, args.events, client(concurrency), timing)
                print(
                    f"{size:>10} {mode:>10} {r['median_ms']:>6.0f}ms {r['p95_ms']:>6.0f}ms "
                    f"{r['median_ms'] / single:>5.2f}x {r['requests']:>8.1f} {r['tokens']:>8.0f} "
                    f"{r['cost']:>10.6f} {r['verdicts_per_s']:>10.0f} {linked(r['linked_after_ms'])} "
                    + ("       -" if r["wal_kib"] is None else f"{r['wal_kib']:>8.1f}")
                )
                figures["runs"].append({"candidates": size, "mode": mode, **r})
                for key, what in (("phases_ms", "by the clock"), ("phases_cpu_ms", "by this process's CPU")):
                    if key in r:
                        print(
                            f"{'':>10} {'':>10} phases {what}, medians (ms): "
                            + "; ".join(f"{PHASE_WORDS[p]} {ms:.1f}" for p, ms in r[key].items())
                        )
        speed["after"] = machine.speed()
        print(f"this machine afterwards: {machine.describe(speed['after'])}")
    finally:
        standin.terminate()
        standin.wait()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory (max RSS of this process): {peak:.0f} MiB")
    throwaway.drop()
    print(json.dumps({**figures, "peak_rss_mib": round(peak)}))


if __name__ == "__main__":
    main()
