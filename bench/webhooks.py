"""Webhooks under load and failure (issue 16): how soon a decision reaches a receiver, and whether
10,000 changes all arrive, none under two ids, through real Celery workers on Redis while the
receiver fails half the time and a worker is killed with SIGKILL mid-delivery.

* **latency**: one worker (prefork, 2 processes) and beat; a receiver that always answers 204;
  this process forgets a memory every 0.2 s; from the commit to the POST reaching the receiver;
* **drill**: N changes (default 10,000) written 100 a transaction by memory_write, as agents'
  writes arrive; the receiver answers 500 to a random half of all requests; once it has
  accepted 3,000 (--kill-at) it holds the next request open, and every worker process is
  killed with SIGKILL while one is mid-delivery, then started again a second later. Retries
  come 1 s apart (WEBHOOK_RETRY_SECONDS, twenty of them, so that a 50% receiver gives up on
  none), and the endpoint is not disabled (the failure limit is raised for the run).
  At the end it counts, at the receiver, the distinct changes accepted, any change accepted
  under two webhook-ids, and any webhook-id accepted twice (a worker killed after the receiver
  answered and before it recorded: the id lets the receiver drop it).

Redis, and PostgreSQL for figures (SQLite runs it at a tiny size, to prove the script works):

    .venv/bin/python bench/webhooks.py --postgres postgres://postgres@127.0.0.1:5432 [--changes 10000]

The last line is one JSON object with every figure.
"""

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
os.environ["CELERY_BROKER_URL"] = BROKER  # before settings load: this process queues on Redis too
os.environ["CACHE_URL"] = BROKER  # the fan-out's nudge flag is shared with the workers
os.environ["CACHE_KEY_PREFIX"] = f"bench-webhooks-{os.getpid()}"
WORKER_ENV = {
    "WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",  # the receiver is on loopback
    "WEBHOOK_RETRY_SECONDS": ",".join(["1"] * 20),
    "WEBHOOK_SWEEP_SECONDS": "1",
    "WEBHOOK_LOST_AFTER_SECONDS": "5",
    "WEBHOOK_TIMEOUT_S": "5",
    "WEBHOOK_DISABLE_AFTER_FAILURES": "1000000",
    "CELERY_VISIBILITY_TIMEOUT": "30",
    "CELERY_RESTORE_INTERVAL": "2",
}
os.environ.update(WORKER_ENV)

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

import redis  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import Count  # noqa: E402

from memory_review.agents import webhooks  # noqa: E402
from memory_review.agents.models import WebhookAttempt, WebhookDelivery  # noqa: E402
from memory_review.integrity.context import acting_as  # noqa: E402
from memory_review.integrity.db_context import tenant_context  # noqa: E402
from memory_review.lifecycle import Actor  # noqa: E402
from memory_review.memories.models import MemoryChange  # noqa: E402
from memory_review.memories.services import event_record, memory_forget, memory_write  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def say(message: str) -> None:
    print(message, flush=True)


class Receiver:
    """Records every POST: its webhook-id, the change's seq and memory, when, and what it answered."""

    def __init__(self, fail_rate: float = 0.0):
        self.fail_rate, self.rng, self.lock = fail_rate, random.Random(11), threading.Lock()
        # Set, the next request is held (answered only after 3 s): the worker sending it is killed
        # meanwhile, mid-delivery, its try open and its lease running.
        self.hold, self.held = threading.Event(), threading.Event()
        self.log: list[tuple[str, int, int, float, int]] = []  # id, seq, memory, at, code
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with receiver.lock:
                    code = 500 if receiver.rng.random() < receiver.fail_rate else 204
                    receiver.log.append(
                        (self.headers["webhook-id"], body["data"]["seq"], body["data"]["memory_id"],
                         time.perf_counter(), code)
                    )  # fmt: skip
                if receiver.hold.is_set() and not receiver.held.is_set():
                    receiver.held.set()
                    time.sleep(3)
                try:
                    self.send_response(code)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the worker was killed while the receiver held its request

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"

    def accepted(self) -> list[tuple[str, int, int, float, int]]:
        with self.lock:
            return [row for row in self.log if row[4] < 300]

    def stop(self) -> None:
        self.server.shutdown()


class Workers:
    def __init__(self, count: int):
        self.count, self.processes = count, []

    def start(self) -> None:
        for n in range(self.count):
            command = [
                sys.executable, "-m", "celery", "-A", "memory_review", "worker", "--pool=prefork",
                "--concurrency=2", f"--hostname=bench{n}-{time.monotonic_ns()}@%h", "--without-gossip",
                "--without-mingle", "--loglevel=ERROR",
            ]  # fmt: skip
            self.processes.append(
                subprocess.Popen(
                    command,
                    cwd=throwaway.ROOT,
                    env=os.environ,
                    start_new_session=True,
                    stdout=subprocess.DEVNULL,
                )
            )

    def beat(self) -> None:
        schedule = os.path.join(tempfile.mkdtemp(), "beat")
        command = [sys.executable, "-m", "celery", "-A", "memory_review", "beat", "--loglevel=ERROR",
                   f"--schedule={schedule}"]  # fmt: skip
        self.processes.append(
            subprocess.Popen(
                command, cwd=throwaway.ROOT, env=os.environ, start_new_session=True, stdout=subprocess.DEVNULL
            )
        )

    def kill_workers(self) -> None:
        """SIGKILL to every worker's process group (its pool processes too); beat lives on."""
        for process in self.processes:
            if "worker" in process.args and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes = [p for p in self.processes if p.poll() is None]

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def wait_until(condition, seconds: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > seconds:
            raise SystemExit(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.2)
    return time.monotonic() - started


def latency(tenant: Tenant, decisions: int) -> dict:
    receiver = Receiver()
    endpoint, _ = webhooks.endpoint_create(tenant, url=receiver.url, kinds=["forgotten"], by="system:bench")
    memories = [
        memory_write(event=event_record(tenant=tenant, source="chat", text=f"Note {n}."), kind="fact",
                     subject=f"latency {n}", content=f"Fact {n}.", written_by="agent:bench")
        for n in range(decisions)
    ]  # fmt: skip
    time.sleep(2)
    committed = {}
    for memory in memories:
        memory_forget(
            memory=memory, actor=Actor("user", "1"), reason="asked", seen_version=memory.row_version
        )
        committed[memory.pk] = time.perf_counter()
        time.sleep(0.2)
    wait_until(lambda: len(receiver.accepted()) >= decisions, 60, "every forget to reach the receiver")
    first = {}
    for _, _, memory_id, at, _ in receiver.accepted():
        first.setdefault(memory_id, at)
    lags = [(first[pk] - committed[pk]) * 1000 for pk in committed]
    receiver.stop()
    webhooks.endpoint_remove(endpoint, by="system:bench")
    return {
        "decisions": decisions,
        "median_ms": round(statistics.median(lags)),
        "p95_ms": round(percentile(lags, 95)),
        "max_ms": round(max(lags)),
    }


def drill(tenant: Tenant, changes: int, pool: Workers, kill_at: int) -> dict:
    receiver = Receiver(fail_rate=0.5)
    endpoint, _ = webhooks.endpoint_create(tenant, url=receiver.url, by="system:bench")
    start_seq = endpoint.cursor
    event = event_record(tenant=tenant, source="chat", text="The agents' writes.")
    started = time.perf_counter()
    killed = threading.Event()

    def killer() -> None:
        wait_until(lambda: len(receiver.accepted()) >= kill_at, 1800, f"{kill_at:,} accepted")
        receiver.hold.set()
        wait_until(receiver.held.is_set, 60, "a request to hold")
        pool.kill_workers()
        killed.set()
        say(
            f"  SIGKILL to every worker at {len(receiver.accepted()):,} accepted, one mid-delivery; "
            "starting them again"
        )
        time.sleep(1)
        pool.start()

    threading.Thread(target=killer, daemon=True).start()
    for start in range(0, changes, 100):
        with transaction.atomic():
            for n in range(start, min(changes, start + 100)):
                memory_write(event=event, kind="fact", subject=f"drill {n}", content=f"Fact {n}.",
                             written_by="agent:bench")  # fmt: skip
    written = time.perf_counter() - started
    say(f"  {changes:,} changes written in {written:.0f} s")
    seqs = set(MemoryChange.objects.filter(tenant=tenant, seq__gt=start_seq).values_list("seq", flat=True))
    wait_until(
        lambda: WebhookDelivery.objects.filter(endpoint=endpoint, state="delivered").count() >= len(seqs),
        3600,
        "every delivery to be made",
    )
    drained = time.perf_counter() - started
    accepted = receiver.accepted()
    ids_by_seq: dict[int, set[str]] = {}
    seq_by_id: dict[str, set[int]] = {}
    for msg_id, seq, *_ in accepted:
        ids_by_seq.setdefault(seq, set()).add(msg_id)
        seq_by_id.setdefault(msg_id, set()).add(seq)
    accepted_ids = [row[0] for row in accepted]
    receiver.stop()
    states = dict(
        WebhookDelivery.objects.filter(endpoint=endpoint)
        .values_list("state")
        .annotate(n=Count("pk"))
        .values_list("state", "n")
    )
    return {
        "changes": len(seqs),
        "killed_mid_run": killed.is_set(),
        "requests_at_receiver": len(receiver.log),
        "answered_500": sum(1 for row in receiver.log if row[4] >= 500),
        "accepted": len(accepted),
        "distinct_changes_accepted": len(ids_by_seq),
        "lost": len(seqs - set(ids_by_seq)),
        "changes_under_two_ids": sum(1 for ids in ids_by_seq.values() if len(ids) > 1),
        "ids_naming_two_changes": sum(1 for found in seq_by_id.values() if len(found) > 1),
        "ids_accepted_twice": len(accepted_ids) - len(set(accepted_ids)),
        "tries_left_open_by_the_kill": WebhookAttempt.objects.filter(
            delivery__endpoint=endpoint, latency_ms__isnull=True
        ).count(),
        "delivery_states": states,
        "written_s": round(written),
        "drained_s": round(drained),
        "deliveries_per_s": round(len(seqs) / drained),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1, help="worker processes (2 pool processes each)")
    parser.add_argument("--kill-at", type=int, default=3000, help="accepted deliveries before the SIGKILL")
    parser.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    redis.Redis.from_url(BROKER).flushdb()
    call_command("migrate", verbosity=0)
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    pool = Workers(args.workers)
    out = {"database": connection.vendor, "workers": args.workers, "pool_processes_each": 2}
    try:
        with tenant_context(tenant.pk), acting_as("agent:bench"):
            pool.start()
            pool.beat()
            time.sleep(3)
            out["latency"] = lat = latency(tenant, args.decisions)
            say(
                f"decision to webhook received ({lat['decisions']} forgets): median {lat['median_ms']} ms, "
                f"p95 {lat['p95_ms']} ms, max {lat['max_ms']} ms"
            )
            say(f"drill: {args.changes:,} changes, a receiver failing half of all tries, workers killed once")
            out["drill"] = d = drill(tenant, args.changes, pool, min(args.kill_at, args.changes // 3))
            say(
                f"  at the receiver: {d['distinct_changes_accepted']:,} of {d['changes']:,} changes "
                f"accepted ({d['lost']} lost), {d['changes_under_two_ids']} under two ids, "
                f"{d['ids_accepted_twice']} ids accepted twice; {d['requests_at_receiver']:,} requests, "
                f"{d['answered_500']:,} answered 500; drained in {d['drained_s']} s "
                f"({d['deliveries_per_s']} deliveries/s)"
            )
    finally:
        pool.stop()
        redis.Redis.from_url(BROKER).flushdb()
        throwaway.drop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
