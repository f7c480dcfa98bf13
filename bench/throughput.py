"""Event throughput as agents grow (issue 17, item 4): agents post events over HTTP at a rising
rate, each naming a customer who has 100 memories in scope, and real Celery workers judge them
against the stand-in answering every request in 150 ms.

What runs, each in processes of its own, as production runs them:
* the web: gunicorn, 4 sync workers (`--web-workers`), with the repository's memory_review/gunicorn_conf.py
  when there is one (gunicorn reads it from the working directory);
* the workers: one Celery worker, prefork, with 1, then 2, then 4 pool processes (`--workers`;
  `--pool threads`: one process, as many threads, each judging an event while others wait;
  `--hosts 2`: two such workers, each in a folder and settings of its own, as two hosts would be),
  on Redis (a database no other run holds, emptied before and after); no beat (its start-up
  verification of the whole trail would land in the middle of the figures);
* the stand-in (`manage.py jev_standin --latency-ms 150`);
* the agents: threads of this process, each with an API token of its own (the shipped rate
  limit, 300 requests a minute a token, stays on), posting `POST /api/v1/t/<slug>/events` on a
  schedule: `--rates` events a second, each held for `--step-seconds`, rising until the workers
  fall behind (fewer than 95% of the offered events done within the step, or a queue left
  behind). Between steps the backlog drains, so each step starts empty. With `--batch N` each
  POST carries N events of one tenant (`POST /api/v1/t/<slug>/events/batch`), a batch every N
  events' time; each event counts against the rate limit as one. The worst shapes real tenants
  make: `--skew 7,1,1,1` gives the tenants uneven shares of the customers (and so of the
  events), and each step then reports every tenant's own post to done; `--burst S` makes the
  events arrive in bursts, each S seconds' worth at once.

Per step it prints events/s offered, accepted (202) and completed (assessments finished in the
step), post to done (from the agent sending the POST to the assessment's finished_at) median and
p95, the POST's own median and p95, and the evidence for what saturates: the queues' depth
(Celery's and the lanes') in Redis, how many assessments were running at once (the pool's
occupancy), the Jev phase of an assessment (its latency_ms: all its requests, the client's waits
for its limits included), CPU per process group (web, workers, stand-in, database, Redis, this
load generator), what no group accounts for, and the machine's, with its CPU milliseconds an event
done, with and without the stand-in's (in production Jev is a remote service), and, where the
hypervisor took any, the time it gave to others (steal, not counted as busy); database
connections, and on PostgreSQL how often a backend waited on a lock (and on the audit chain's
head) and what the lock's holder was doing; and the feed's lag: one more agent follows the first
tenant's change feed by long poll, and each step says how long after a change was written it heard
of it (the sequencer's delay and run included). `--chain-hold N` first times, in this process, how
long each of N events' transactions holds the tenant's audit chain head (every sealed write and
transition of a tenant waits for it). It times this machine's speed at its start and end
(bench/machine.py: a bare loop's seconds, the load), and closes with one JSON line.

    .venv/bin/python bench/throughput.py --postgres postgres://postgres@127.0.0.1:5432
    .venv/bin/python bench/throughput.py --postgres URL --workers 8 --skew 7,1,1,1 --burst 5
    .venv/bin/python bench/throughput.py --customers 20 --workers 1 --rates 2 --step-seconds 3  # SQLite, tiny

Redis is needed (a database of the run's own, or BENCH_BROKER_URL), and gunicorn (the `prod` extra,
which `make install` installs).
"""

import argparse
import http.client
import json
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import machine
import redis_db


def free_port() -> int:  # throwaway.free_port: it cannot be imported before these settings
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


BROKER = redis_db.free_redis_database()
STANDIN_PORT, WEB_PORT = free_port(), free_port()
POST_TIMEOUT_S = 60  # an agent's wait for the web's answer to one POST (it tries twice)
os.environ["CELERY_BROKER_URL"] = BROKER  # before settings load: the web queues on Redis too
os.environ["CACHE_URL"] = BROKER  # the API's rate limit counts here, shared by the web's workers
os.environ["CACHE_KEY_PREFIX"] = f"bench-throughput-{os.getpid()}"
os.environ["JEV_STANDIN_URL"] = f"http://127.0.0.1:{STANDIN_PORT}"
# Audit rows linked by the sequencer's runs on the workers, as the settings' default does
# (docs/audit.md, "Sequencing"); AUDIT_SEQUENCER=inline in the environment times each writer
# linking its own under the head.
os.environ.setdefault("AUDIT_SEQUENCER", "deferred")

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory_review.agents import feed  # noqa: E402
from memory_review.assessments import questions  # noqa: E402
from memory_review.assessments.invalidation import VERDICT_COLUMNS, VerdictRow  # noqa: E402
from memory_review.assessments.models import Assessment, Disposition, PolicyVersion, Verdict  # noqa: E402
from memory_review.assessments.services import policy_ensure_default  # noqa: E402
from memory_review.audit import sequencer  # noqa: E402
from memory_review.memories.models import Memory, MemoryChange, content_hash  # noqa: E402
from memory_review.memories.services import event_record  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402
from memory_review.tenancy.tokens import token_create  # noqa: E402

ROOT = throwaway.ROOT
# Where the events wait: Celery's default queue and the tenants' lanes, each a Redis list.
QUEUES = ("celery", *settings.ASSESSMENT_LANE_QUEUES)
WORDS = (
    "amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon marble nectar "
    "obsidian pepper quartz raven saffron tundra umber velvet willow xenon yarrow zephyr anchor "
    "beacon canyon dune estuary falcon glacier heron island jasper kestrel lantern meadow nimbus"
).split()


def say(message: str) -> None:
    print(message, flush=True)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def words_for(n: int) -> list[str]:
    """Four words of memory n alone (the stand-in compares six-letter stems: the number leads)."""
    return [f"m{n:05d}{WORDS[(n + 7 * k) % len(WORDS)]}" for k in range(4)]


def customer(c: int) -> str:
    return f"cust-{c:06d}"


# -- the tenant ---------------------------------------------------------------------------------


def slug(t: int) -> str:
    return f"bench{t}"


class Tenants:
    """Which tenant customer c belongs to: tenant t holds weights[t] of every sum(weights)
    customers, so events (which name customers evenly) reach each tenant in that proportion.
    Even weights spread them alike; `--skew 7,1,1,1` gives one tenant 70% of the events, as a
    big customer beside small ones does."""

    def __init__(self, weights: list[int]):
        self.count = len(weights)
        self.cycle = [t for t, w in enumerate(weights) for _ in range(w)]

    def of(self, c: int) -> int:
        return self.cycle[c % len(self.cycle)]

    def customers(self, t: int, customers: int) -> list[int]:
        """Tenant t's customers among the first `customers`."""
        return [c for c in range(customers) if self.of(c) == t]


def build(customers: int, each: int, agents: int, tenants: Tenants, history: int = 0) -> list[dict[str, str]]:
    """`customers` customers of `each` memories, all in the customer's scope (no tenant-wide
    memory, so an event's candidates are exactly its customer's), customer c in tenant
    `tenants.of(c)`, each memory with `history` votes behind it; for each agent a token of every
    tenant (by slug)."""
    for t in range(tenants.count):
        mine = tenants.customers(t, customers)
        _tenant(t, mine, each)
        if history:
            _history(Tenant.objects.get(slug=slug(t)), mine, history)
    # What a bulk load leaves waiting is linked before the run, as an upgrade's first runs would.
    linking = time.monotonic()
    linked = sum(sequencer.run(t.pk).rows for t in Tenant.objects.order_by("pk"))
    say(f"the sequencer linked the build's {linked:,} audit rows in {time.monotonic() - linking:.1f} s\n")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return [
        {
            slug(t): token_create(tenant=Tenant.objects.get(slug=slug(t)), name=f"agent {n}")[1]
            for t in range(tenants.count)
        }
        for n in range(agents)
    ]


def _tenant(t: int, customers: list[int], each: int) -> None:
    tenant = Tenant.objects.create(slug=slug(t), name=f"Bench {t}")
    policy_ensure_default(tenant=tenant, created_by="bench")
    source = event_record(tenant=tenant, source="crm", text="Imported account notes.")
    rows = []
    for c in customers:
        for n in range(each):
            a, b, c_, d = words_for(n)
            content = f"{a.title()} {b} {c_} {d}."
            rows.append(
                Memory(
                    tenant=tenant, source_event=source, kind="fact", subject=f"note {n}", content=content,
                    content_hash=content_hash(content), written_by="bench", user_id=customer(c),
                )
            )  # fmt: skip
        if len(rows) >= 5000:
            Memory.objects.bulk_create(rows, batch_size=1000)
            rows = []
    Memory.objects.bulk_create(rows, batch_size=1000)


def _history(tenant: Tenant, customers: list[int], past: int) -> None:
    """`past` earlier events a customer, each judged against every memory of the customer's, as
    the pipeline records them (a done assessment, a sealed verdict a memory, most unrelated): so
    every memory has `past` votes behind it, and the verdicts, seals and their indexes that every
    new event reads and writes are that many times deeper, as a tenant's are after months."""
    policy = PolicyVersion.objects.for_tenant(tenant.pk).active()
    now = timezone.now()
    for c in customers:
        memories = list(
            Memory.objects.filter(tenant=tenant, user_id=customer(c)).values_list("pk", "row_version")
        )
        for k in range(past):
            event = event_record(
                tenant=tenant,
                source="email",
                text=f"Earlier note {k} about the account.",
                user_id=customer(c),
            )
            assessment = Assessment.objects.create(
                tenant=tenant, purpose=Assessment.Purpose.INVALIDATION, event=event, policy=policy,
                question_set_version=questions.INVALIDATION_VERSION, requests=6, state=Assessment.State.DONE,
                candidates_total=len(memories), judged_at=now, finished_at=now,
            )  # fmt: skip
            unrelated = dict(
                tenant_id=tenant.pk, assessment_id=assessment.pk, event_id=event.pk, applied=False,
                disposition=Disposition.UNRELATED, proposed_status=None, shadow_policy_id=None,
                shadow_disposition=None, created_at=now, still_true=0.9, replaces=0.1, partial=0.1,
                hypothetical=0.05, directive=0.05,
            )  # fmt: skip
            rows = [
                VerdictRow(**unrelated, memory_id=pk, row_version=version, bears=0.05 + (pk + k) % 10 / 100)
                for pk, version in memories
            ]
            Verdict.objects.insert_values(VERDICT_COLUMNS, rows)


class Events:
    """Event k names customer k mod C and bears on one memory of theirs (the next not yet
    judged), whose words it repeats and says changed: one verdict of 100 moves, as a ticket's
    event usually does."""

    def __init__(self, customers: int, each: int, tenants: Tenants, start: int = 0):
        self.customers, self.each, self.tenants, self.next = customers, each, tenants, start
        self.lock = threading.Lock()
        # --batch: each tenant's own stream of its customers' events, and whose batch is next.
        self.of_tenant = [tenants.customers(t, customers) for t in range(tenants.count)]
        self.next_of: list[int | None] = [None] * tenants.count
        self.turn = start

    def take(self) -> tuple[str, bytes]:
        """(the customer's tenant, the event)."""
        with self.lock:
            k, self.next = self.next, self.next + 1
        c, n = k % self.customers, (k // self.customers) % self.each
        return slug(self.tenants.of(c)), self._event(k, c, n)

    def take_batch(self, size: int) -> tuple[str, list[bytes]]:
        """(a tenant, `size` events of its own customers): tenants take turns in proportion to
        their weights, as their events do one at a time. A batch an agent posts names one tenant
        in its path, so an event of another tenant's customer in it would be judged against no
        memory at all, cheaply: a batch holds only the tenant's own."""
        with self.lock:
            t, self.turn = self.tenants.cycle[self.turn % len(self.tenants.cycle)], self.turn + 1
            mine = self.of_tenant[t]
            if self.next_of[t] is None:  # past every memory `take()` has named (the chain hold's events)
                self.next_of[t] = -(-self.next // self.customers) * len(mine)
            first, self.next_of[t] = self.next_of[t], self.next_of[t] + size
        picked = ((k % len(mine), (k // len(mine)) % self.each, k) for k in range(first, first + size))
        return slug(t), [self._event(k, mine[i], n) for i, n, k in picked]

    def _event(self, k: int, c: int, n: int) -> bytes:
        a, b, c_, _ = words_for(n)
        text = f"{a.title()} {b} {c_} now changed to {WORDS[k % len(WORDS)]} instead."
        return json.dumps({"text": text, "source": "email", "scope": {"user_id": customer(c)}}).encode()


# -- the processes ------------------------------------------------------------------------------


def start(command: list[str], *, cwd: Path = ROOT, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        command, cwd=cwd, env=os.environ if env is None else env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


# What a worker host is given (docs/deploy.md, "Web and workers on separate hosts"): the settings
# that must agree with the web's, and the knobs of this run; nothing else of this process's
# environment. It runs in a folder of its own with a VAR_DIR of its own, as on another machine.
AGREE = (
    "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SQLITE_PATH", "ORACLE_DSN", "CELERY_BROKER_URL", "REDIS_URL",
    "CACHE_URL", "CACHE_KEY_PREFIX", "SECRET_KEY", "AUDIT_KEY", "AUDIT_KEY_ID", "AUDIT_CHECKPOINT_DIR",
    "TYPESAFE_API_KEY", "TYPESAFE_BASE_URL", "JEV_STANDIN_URL", "DEBUG", "LOG_LEVEL",
)  # fmt: skip
KNOBS = ("JEV_", "CELERY_", "CONN_", "ASSESSMENT_", "AUDIT_SEQUENCE", "POSTGRES_")


def worker_host_env(var_dir: str) -> dict:
    env = {name: os.environ[name] for name in AGREE if name in os.environ}
    env.update({name: value for name, value in os.environ.items() if name.startswith(KNOBS)})
    env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"), PYTHONPATH=str(ROOT), VAR_DIR=var_dir)
    return env


def threads_budget(pool: str, threads: int) -> dict[str, str]:
    """What a worker's environment gets of Jev's limits beyond the run's own. JEV_REQUESTS_PER_MINUTE
    and JEV_MAX_CONCURRENCY are a process's (docs/deploy.md), and a threads worker's one process
    carries all its threads' requests: each that the run does not name gets what as many prefork
    processes would have had between them, so the two pools are timed on the same budget. (At one
    process's 1,200 a minute, 20 requests a second, a threads worker judges about three events a
    second once the first minute's burst is spent, however many threads it has; at 32 requests at
    once, five events' worth, a burst's events wait for places.) The stand-in enforces no key's
    limit. Request threads are made as they are needed."""
    if pool != "threads":
        return {}
    return {name: str(getattr(settings, name) * threads) for name in BUDGETS if name not in os.environ}


BUDGETS = ("JEV_REQUESTS_PER_MINUTE", "JEV_MAX_CONCURRENCY")


# -- what each process group spends -------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int, *, reaped: bool = True) -> tuple[str, int, int] | None:
    """(command, parent, CPU ticks of the process, and of its reaped children unless not `reaped`)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()
    return name, int(fields[1]), sum(int(v) for v in fields[11 : 15 if reaped else 13])


def _processes() -> dict[int, tuple[str, int, int]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            found[int(entry)] = stat
    return found


def resident_mb(root: int) -> dict:
    """The resident memory of `root` and its descendants (a prefork pool's processes), in MB."""
    procs = _processes()
    family, stack = [], [root]
    while stack:
        pid = stack.pop()
        family.append(pid)
        stack.extend(child for child, (_, parent, _) in procs.items() if parent == pid)
    pages = 0
    for pid in family:
        try:
            pages += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except OSError:
            continue
    return {"total": round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20), "processes": len(family)}


class Cpu:
    """CPU seconds per group of processes: a group is its roots and every descendant; a root's
    reaped children count through its own cumulative figures. `agents` is this process alone."""

    def __init__(self, roots: dict[str, list[int]], database: "DatabaseCpu | None"):
        self.roots, self.database = roots, database

    def read(self) -> dict[str, float]:
        procs = _processes()
        children: dict[int, list[int]] = {}
        for pid, (_, parent, _) in procs.items():
            children.setdefault(parent, []).append(pid)
        out = {}
        for group, pids in self.roots.items():
            total, stack = 0, list(pids)
            while stack:
                pid = stack.pop()
                if pid in procs:
                    total += procs[pid][2]
                    stack.extend(children.get(pid, []))
            out[group] = total / TICK
        out["redis"] = sum(ticks for comm, _, ticks in procs.values() if comm == "redis-server") / TICK
        if self.database:
            out["database"] = self.database.seconds()
        # This process alone: the others are its children, counted in their own groups.
        out["agents"] = _stat(os.getpid(), reaped=False)[2] / TICK
        whole = machine.cpu_seconds()  # what ran, not the time the hypervisor gave to others
        out["_machine_busy"], out["_machine_steal"] = whole["busy"], whole["steal"]
        return out


class DatabaseCpu:
    """CPU seconds of PostgreSQL's backends of this run's database and of the server's own
    processes (WAL writer, checkpointer, autovacuum), not other databases' backends (others' work
    on the same server). Backends come and go, so it is added up backend by backend at every
    sample (`count()`), and what one did between its last sample and its exit is lost."""

    def __init__(self, name: str):
        self.name, self.seen, self.ticks = name, {}, 0
        self.lock = threading.Lock()

    def count(self) -> None:
        now = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and self._serves_us(int(entry)) and (stat := _stat(int(entry), reaped=False)):
                now[int(entry)] = stat[2]
        with self.lock:
            self.ticks += sum(ticks - self.seen.get(pid, 0) for pid, ticks in now.items())
            self.seen = now

    def seconds(self) -> float:
        self.count()
        with self.lock:
            return self.ticks / TICK

    def _serves_us(self, pid: int) -> bool:
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False
        # A client backend names its database and its peer's address in parentheses.
        return title.startswith("postgres:") and (f" {self.name} " in title or "(" not in title)


# -- sampling the queue, the pool and the database ----------------------------------------------


class Sampler(threading.Thread):
    """Every 0.25 s: the queue's depth in Redis, assessments running, and on PostgreSQL what each
    of the run's backends is doing (waiting on a lock, and on the chain head's row)."""

    def __init__(self, broker: redis.Redis, database: DatabaseCpu | None):
        super().__init__(daemon=True)
        self.broker, self.database, self.stopping = broker, database, threading.Event()
        self.samples: list[dict] = []
        self.lock = threading.Lock()
        self.reniced: set[int] = set()

    def run(self) -> None:
        pg = None
        if connection.vendor == "postgresql":
            import psycopg

            pg = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        while not self.stopping.wait(0.25):
            depths = self.broker.pipeline(transaction=False)
            for name in QUEUES:
                depths.llen(name)
            sample = {"at": time.time(), "queue": sum(depths.execute())}
            sample["running"] = Assessment.objects.filter(state=Assessment.State.RUNNING).count()
            if pg is not None:
                rows = pg.execute(
                    "SELECT state, wait_event_type, wait_event, query FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchall()
                sample["connections"] = len(rows)
                active = [r for r in rows if r[0] == "active"]
                sample["active"] = len(active)
                sample["lock_waits"] = sum(1 for r in active if r[1] == "Lock")
                sample["chain_waits"] = sum(
                    1 for r in active if r[1] == "Lock" and "audit_auditchain" in (r[3] or "")
                )
                sample["io_waits"] = sum(1 for r in active if r[1] == "IO")
                sample["waits"] = [
                    f"{r[1]}:{r[2]}" for r in rows if r[1] and r[1] not in ("Client", "Activity")
                ]
                # Who holds what the waiting wait for (the head of the queue, itself not waiting for
                # a lock), and what it is doing: a statement ("active"), or the application's own
                # work between two ("idle in transaction") after the last statement it sent.
                sample["holders"] = pg.execute(
                    "SELECT state, left(query, 60) FROM pg_stat_activity WHERE wait_event_type IS DISTINCT"
                    " FROM 'Lock' AND pid IN (SELECT unnest(pg_blocking_pids(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock')"
                ).fetchall()
                self._same_priority(pid for (pid,) in pg.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                ).fetchall())  # fmt: skip
                self.database.count()
            with self.lock:
                self.samples.append(sample)
        if pg is not None:
            pg.close()
        connection.close()

    def _same_priority(self, pids) -> None:
        """The run's database backends at this process's priority (`nice -n -10` on a machine
        others share puts the whole run ahead of their work), where the user may set it."""
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        for pid in pids:
            if pid not in self.reniced:
                self.reniced.add(pid)
                try:
                    os.setpriority(os.PRIO_PROCESS, pid, mine)
                except OSError:
                    pass

    def between(self, start: float, end: float) -> list[dict]:
        with self.lock:
            return [s for s in self.samples if start <= s["at"] <= end]


# -- the agents ---------------------------------------------------------------------------------


class Agents:
    """`count` agents, each a thread with its own token and keep-alive connection, posting what
    the schedule hands them; a late agent posts late (the schedule does not wait for it)."""

    def __init__(self, tokens: list[dict[str, str]], events: Events, batch: int = 1, burst: float = 0):
        self.work: queue.Queue = queue.Queue()
        self.results: list[dict] = []
        self.lock = threading.Lock()
        self.events, self.batch, self.burst = events, batch, burst
        self.tenants = list(tokens[0])  # every tenant's slug, in the order they were made
        for mine in tokens:
            threading.Thread(target=self._agent, args=(mine,), daemon=True).start()

    def _take(self) -> tuple[str, str, bytes]:
        """(the tenant, the path, the body): one event, or with --batch a batch of one tenant's."""
        if self.batch == 1:
            to, body = self.events.take()
            return to, f"/api/v1/t/{to}/events", body
        to, bodies = self.events.take_batch(self.batch)
        events = [json.loads(body) for body in bodies]
        return to, f"/api/v1/t/{to}/events/batch", json.dumps({"events": events}).encode()

    def _agent(self, tokens: dict[str, str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", WEB_PORT, timeout=POST_TIMEOUT_S)
        while True:
            due = self.work.get()
            (to, path, body), sent = self._take(), time.time()
            headers = {"Authorization": f"Bearer {tokens[to]}", "Content-Type": "application/json"}
            answer, code = b"", 0
            for _ in range(2):  # a kept-alive connection the server closed meanwhile: once more, anew
                try:
                    conn.request("POST", path, body=body, headers=headers)
                    response = conn.getresponse()
                    answer, code = response.read(), response.status
                    break
                except (OSError, http.client.HTTPException):
                    conn.close()
            at = {"due": due, "sent": sent, "answered": time.time(), "code": code, "tenant": to}
            if code != 202:
                results = [at] * self.batch
            elif self.batch == 1:
                results = [{**at, "assessment": json.loads(answer)["assessment_id"]}]
            else:
                results = [{**at, "assessment": e["assessment_id"]} for e in json.loads(answer)["events"]]
            with self.lock:
                self.results.extend(results)

    def expected(self, rate: float, seconds: float) -> int:
        """The events `offer(rate, seconds)` hands out: whole batches."""
        return max(1, round(rate * seconds / self.batch)) * self.batch

    def offer(self, rate: float, seconds: float) -> tuple[float, float]:
        """Hand out `rate` events a second for `seconds` (with --batch, a batch every `batch`
        events' time; with --burst S, each S seconds' events all due at the start of their S
        seconds); returns (start, end) of the schedule."""
        start, count, every = time.time(), self.expected(rate, seconds) // self.batch, self.batch / rate
        for k in range(count):
            due = start + (k * every // self.burst * self.burst if self.burst else k * every)
            time.sleep(max(0.0, due - time.time()))
            self.work.put(due)
        return start, start + count * every

    def answered(self, count: int) -> list[dict]:
        """The answers to the `count` events handed out since the last call, once every one is in:
        each POST ends, answered or given up after its tries, so an answer slower than the step
        is counted in its own step, not lost from it and added to the next."""
        deadline = time.monotonic() + 2 * POST_TIMEOUT_S + 10
        while len(self.results) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        with self.lock:
            out, self.results = self.results, []
        return out


class Follower:
    """An agent following the first tenant's change feed (`GET changes?wait=5`, a token of its
    own), as one waiting on decisions does: how long after each change was written it hears of it.
    That lag is the sequencer's (`AUDIT_SEQUENCE_DELAY_MS` and a run: a change is in the feed once
    it has its position) and the long poll's (it looks again every 0.2 s: agents/feed.py). Refused
    requests (the token's rate limit, say) are counted, not hidden."""

    def __init__(self, tenant: Tenant):
        self.tenant, self.path = tenant, f"/api/v1/t/{tenant.slug}/changes"
        self.token = token_create(tenant=tenant, name="feed follower")[1]
        self.cursor, self.heard, self.refused, self.lock = feed.head(tenant), [], Counter(), threading.Lock()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", WEB_PORT, timeout=30)
        headers = {"Authorization": f"Bearer {self.token}"}
        while True:
            try:
                conn.request("GET", f"{self.path}?after={self.cursor}&wait=5", headers=headers)
                response = conn.getresponse()
                code, body, wait = response.status, response.read(), response.getheader("Retry-After")
            except (OSError, http.client.HTTPException):
                conn.close()
                time.sleep(0.5)
                continue
            now = time.time()
            if code != 200:
                with self.lock:
                    self.refused[str(code)] += 1
                time.sleep(float(wait) if wait and wait.isdigit() else 0.5)
                continue
            page = json.loads(body)
            with self.lock:
                self.heard.extend(
                    (written, (now - written) * 1000)
                    for written in (_epoch(change["at"]) for change in page["changes"])
                )
            self.cursor = page["cursor"]

    def lags(self, start: float, end: float) -> dict:
        """The changes written between `start` and `end`: how many, how many were heard (waiting a
        few seconds for the last), their lag, and the requests refused so far."""
        written = MemoryChange.objects.filter(
            tenant=self.tenant, created_at__gte=_moment(start), created_at__lte=_moment(end)
        ).count()
        deadline = time.monotonic() + 5
        while True:
            with self.lock:
                lags = [ms for at, ms in self.heard if start <= at <= end]
                refused = dict(self.refused)
            if len(lags) >= written or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        median = _r(statistics.median(lags)) if lags else None
        return {"written": written, "heard": len(lags), "median": median, "p95": _r(percentile(lags, 95)),
                "refused": refused}  # fmt: skip


# -- one step -----------------------------------------------------------------------------------


def wait_done(ids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not Assessment.objects.filter(pk__in=ids).exclude(state__in=("done", "failed")).exists():
            return True
        time.sleep(0.5)
    return False


def step(
    agents: Agents,
    sampler: Sampler,
    cpu: Cpu,
    rate: float,
    seconds: float,
    drain_s: float,
    follower: Follower,
) -> dict:
    before = cpu.read()
    start, end = agents.offer(rate, seconds)
    # The agents' last POSTs may still be in flight: every one is waited for.
    posted = agents.answered(agents.expected(rate, seconds))
    window_end = max(end, time.time())
    after = cpu.read()
    ids = [r["assessment"] for r in posted if "assessment" in r]
    samples = sampler.between(start, window_end)
    queue_at_end = samples[-1]["queue"] if samples else 0
    drained = wait_done(ids, drain_s)
    rows = {
        pk: (finished, state, jev_ms, candidates, requests)
        for pk, finished, state, jev_ms, candidates, requests in Assessment.objects.filter(
            pk__in=ids
        ).values_list("pk", "finished_at", "state", "latency_ms", "candidates_total", "requests")
    }
    sent = {r["assessment"]: r["sent"] for r in posted if "assessment" in r}
    done_ms = {pk: (row[0].timestamp() - sent[pk]) * 1000 for pk, row in rows.items() if row[0] is not None}
    to_done = list(done_ms.values())
    by_tenant = {to: {"posted": 0, "accepted": 0, "done_ms": []} for to in agents.tenants}
    for r in posted:
        mine = by_tenant[r["tenant"]]
        mine["posted"] += 1
        if "assessment" in r:
            mine["accepted"] += 1
            if r["assessment"] in done_ms:
                mine["done_ms"].append(done_ms[r["assessment"]])
    # Completions in the step's window moved on by the median post to done: in a steady state
    # exactly the step's rate, when the workers fall behind what they can do (the backlog drains
    # at that pace after the step too).
    lag = statistics.median(to_done) / 1000 if to_done else 0.0
    finished_in_step = Assessment.objects.filter(
        finished_at__gte=_moment(start + lag), finished_at__lte=_moment(window_end + lag)
    ).count()
    post_ms = [(r["answered"] - r["sent"]) * 1000 for r in posted]
    late_ms = [(r["sent"] - r["due"]) * 1000 for r in posted]
    duration = window_end - start
    spent = {group: after[group] - before[group] for group in after}
    figures = {
        "offered_per_s": rate,
        "seconds": round(duration, 1),
        "posted": len(posted),
        "accepted": len(ids),
        "refused": dict(Counter(str(r["code"]) for r in posted if r["code"] != 202)),
        "accepted_per_s": round(len(ids) / duration, 2),
        "completed_per_s": round(finished_in_step / duration, 2),
        "failed": sum(1 for row in rows.values() if row[1] == "failed"),
        "drained": drained,
        "post_to_done_ms": {
            "median": _r(statistics.median(to_done) if to_done else None),
            "p95": _r(percentile(to_done, 95)),
        },  # fmt: skip
        # Every tenant's own, in the order they were made, one that had nothing done included: a
        # small tenant beside a big one must not wait behind it. `events` are those done.
        "post_to_done_by_tenant_ms": [
            {"tenant": to, "posted": mine["posted"], "accepted": mine["accepted"], **_spread(mine["done_ms"])}
            for to, mine in by_tenant.items()
        ],
        "post_ms": {"median": _r(statistics.median(post_ms)), "p95": _r(percentile(post_ms, 95))},
        "agent_late_ms_p95": _r(percentile(late_ms, 95)),
        "jev_phase_ms": {
            "median": _r(statistics.median([r[2] for r in rows.values()] or [0])),
            "p95": _r(percentile([r[2] for r in rows.values()], 95)),
        },  # fmt: skip
        "candidates_mean": round(statistics.mean([r[3] for r in rows.values()] or [0]), 1),
        "requests_mean": round(statistics.mean([r[4] for r in rows.values()] or [0]), 1),
        "queue_max": max((s["queue"] for s in samples), default=0),
        "queue_at_end": queue_at_end,
        "running_mean": round(statistics.mean([s["running"] for s in samples] or [0]), 2),
        "cpu_percent": {g: round(100 * v / duration) for g, v in spent.items() if not g.startswith("_")},
        "machine_busy_percent": round(100 * spent["_machine_busy"] / duration),
        # Time the machine's work was ready but the hypervisor ran others' (not in busy above).
        "machine_steal_percent": round(100 * spent["_machine_steal"] / duration, 1),
        # What no group accounts for: the kernel's own work, other processes, and backends that
        # exited between two samples (a connection opened and closed for each task hid here).
        "unaccounted_percent": round(
            100
            * (spent["_machine_busy"] - sum(v for g, v in spent.items() if not g.startswith("_")))
            / duration
        ),
        # The measure: the whole machine's CPU over the events done in the step (its
        # completions counted in the window moved on by the median post to done, as above: in a
        # steady state the step's own events).
        "machine_cpu_ms_per_event": _r(
            1000 * spent["_machine_busy"] / finished_in_step if finished_in_step else None
        ),
        # The same less the stand-in's own: what the hosts spend where Jev is a remote service.
        "machine_cpu_ms_per_event_without_standin": _r(
            1000 * (spent["_machine_busy"] - spent.get("standin", 0)) / finished_in_step
            if finished_in_step
            else None
        ),
        "feed_lag_ms": follower.lags(start, window_end),
    }
    if samples and "connections" in samples[0]:
        active = sum(s["active"] for s in samples) or 1
        figures["db"] = {
            "connections_max": max(s["connections"] for s in samples),
            "active_mean": round(statistics.mean(s["active"] for s in samples), 2),
            "lock_wait_share": round(sum(s["lock_waits"] for s in samples) / active, 3),
            "chain_head_wait_share": round(sum(s["chain_waits"] for s in samples) / active, 3),
            "io_wait_share": round(sum(s["io_waits"] for s in samples) / active, 3),
            "wait_events": dict(Counter(w for s in samples for w in s["waits"]).most_common(6)),
            "lock_holders": [
                {"state": state, "last_statement": query, "samples": n}
                for (state, query), n in Counter(h for s in samples for h in s["holders"]).most_common(4)
            ],
        }
    return figures


def _moment(epoch: float):
    return datetime.fromtimestamp(epoch, tz=UTC)


def _epoch(at: str) -> float:
    return datetime.fromisoformat(at).timestamp()


def _spread(ms: list[float]) -> dict:
    """How many, and their median and p95 (None of none)."""
    median = statistics.median(ms) if ms else None
    return {"events": len(ms), "median": _r(median), "p95": _r(percentile(ms, 95))}


def _r(value: float | None) -> float | None:
    return None if value is None or value != value else round(value)


def keeps_up(figures: dict) -> bool:
    """Done at the rate offered (95%), nothing left queued past a second's worth, none failed."""
    return (
        figures["completed_per_s"] >= 0.95 * figures["offered_per_s"]
        and figures["accepted_per_s"] >= 0.95 * figures["offered_per_s"]
        and figures["queue_at_end"] <= max(1, figures["offered_per_s"])
        and figures["failed"] == 0
        and figures["drained"]
    )


GROUPS = ("web", "workers", "standin", "database", "redis", "agents")


def print_step(workers: int, f: dict) -> None:
    cpu = f["cpu_percent"]
    db = f.get("db", {})
    say(
        f"{workers:>7} {f['offered_per_s']:>7g} {f['accepted_per_s']:>8.1f} {f['completed_per_s']:>9.1f} "
        f"{f['post_to_done_ms']['median'] or 0:>7.0f} {f['post_to_done_ms']['p95'] or 0:>7.0f} "
        f"{f['post_ms']['median']:>5.0f} {f['post_ms']['p95']:>5.0f} {f['jev_phase_ms']['median']:>5.0f} "
        f"{f['queue_max']:>5} {f['running_mean']:>5.1f}"
        + "".join(f"{cpu.get(group, 0):>5}" for group in GROUPS)
        + f" {f['unaccounted_percent']:>5} {f['machine_busy_percent']:>5}"
        f" {f['machine_cpu_ms_per_event'] or '-':>5} "
        f"{db.get('lock_wait_share', 0):>6.1%} {db.get('chain_head_wait_share', 0):>6.1%}"
        + ("" if keeps_up(f) else "  (falls behind)")
    )
    if f.get("feed_lag_ms", {}).get("heard"):
        lag = f["feed_lag_ms"]
        say(
            f"        the first tenant's feed: {lag['heard']} of {lag['written']} changes heard, written to "
            f"heard median / p95 {lag['median']:.0f} / {lag['p95']:.0f} ms; "
            f"requests refused so far: {lag['refused'] or 'none'}"
        )
    if f["machine_cpu_ms_per_event_without_standin"] is not None:
        say(
            f"        CPU an event without the stand-in's (Jev remote, as in production): "
            f"{f['machine_cpu_ms_per_event_without_standin']:.0f} ms"
        )
    if f["machine_steal_percent"] >= 1:
        stolen = f["machine_steal_percent"]
        say(f"        stolen: the hypervisor ran others for {stolen}% of a core (not in busy)")
    if len(f["post_to_done_by_tenant_ms"]) > 1:
        say(
            "        by tenant (events, post→done median / p95 ms): "
            + "; ".join(f"{t['events']}, {t['median']} / {t['p95']}" for t in f["post_to_done_by_tenant_ms"])
        )


HEADER = (
    "workers offered accepted completed  median     p95  POST   p95   Jev queue   run "
    "  web  wrk  jev   db redis agnt other  busy  CPU    lock  chain\n"
    "           ev/s     ev/s      ev/s  post→done (ms)  (ms)        (ms)   max  mean "
    "   CPU % of one core per group, and the machine's     ms/ev  waits (share of active)"
)


def run_pool(
    workers: int, rates: list[float], args, agents: Agents, sampler: Sampler, roots, follower: Follower
) -> dict:
    """One run: `--hosts` Celery workers, each in a folder and settings of its own as a worker host
    is (docs/deploy.md), sharing only the database and the broker, each with a pool of `workers`."""
    started, budget = [], threads_budget(args.pool, workers)
    for h in range(args.hosts):
        host = tempfile.mkdtemp(prefix=f"bench-worker-host{h}-")
        started.append(start(
            [sys.executable, "-m", "celery", "-A", "memory_review", "worker", f"--pool={args.pool}",
             f"--concurrency={workers}", f"--hostname=throughput{workers}-{h}-{os.getpid()}@%h",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"],
            cwd=Path(host), env={**worker_host_env(host), **budget},
        ))  # fmt: skip
    cpu = Cpu({**roots, "workers": [worker.pid for worker in started]}, sampler.database)
    try:
        # Warm every pool process (imports, the question sets, a connection), out of the figures.
        warming = workers * 2 * args.hosts
        agents.offer(warming, 1.0)
        warm = [r["assessment"] for r in agents.answered(agents.expected(warming, 1.0)) if "assessment" in r]
        if not wait_done(warm, 120):
            raise SystemExit("the workers did not finish the warm-up events within 120 s")
        steps = []
        for rate in rates:
            figures = step(agents, sampler, cpu, rate, args.step_seconds, args.drain_seconds, follower)
            steps.append(figures)
            print_step(workers, figures)
            if not keeps_up(figures):
                break
        kept = [f for f in steps if keeps_up(f)]
        each = [resident_mb(worker.pid) for worker in started]
        resident = {"total": sum(r["total"] for r in each), "processes": sum(r["processes"] for r in each)}
        print(f"        worker memory: {resident['total']} MB resident, {resident['processes']} process(es)")
        return {
            "workers": workers,
            "hosts": args.hosts,
            "resident_mb": resident,
            # What each worker process had of Jev (threads_budget), as the run gave it.
            "jev_a_process": {n.lower(): int(budget.get(n, getattr(settings, n))) for n in BUDGETS},
            "sustained_per_s": max((f["completed_per_s"] for f in kept), default=0.0),
            "sustained_offered_per_s": max((f["offered_per_s"] for f in kept), default=0.0),
            "ceiling_per_s": max(f["completed_per_s"] for f in steps),
            "steps": steps,
        }
    finally:
        for worker in started:
            throwaway.stop(worker)


# -- how long an event holds its tenant's audit chain head -----------------------------------------


def chain_hold(events: Events, count: int, tokens: dict[str, str]) -> dict:
    """Each of `count` events in this process, one at a time: its POST through Django's test client,
    then the worker's judging, recording and applying (run_invalidation, Jev being the stand-in),
    then the sequencer's run that links what they wrote; for each transaction that takes the
    tenant's audit chain head, the time from taking it to the commit (when it lets go). Since issue
    30 only the sequencer takes it: the POST, the recording and the applying should take none."""
    from django.db import transaction
    from django.test import Client

    from memory_review.assessments import invalidation
    from memory_review.audit import sequencer
    from memory_review.integrity import heads

    held: dict[int, float] = {}
    found: list[tuple[str, float]] = []
    doing = ["POST"]

    def timed_lock_head(tenant_id: int):
        key = id(transaction.get_connection())
        if key not in held:  # the transaction's first take; it lets go when it commits
            held[key], label = time.perf_counter(), doing[0]
            transaction.on_commit(lambda: found.append((label, (time.perf_counter() - held.pop(key)) * 1000)))
        return heads.lock_head(tenant_id)

    def applying(*args, **kwargs):
        doing[0] = "applying"
        return apply_verdicts(*args, **kwargs)

    apply_verdicts = invalidation.apply_verdicts
    sequencer.lock_head = timed_lock_head
    invalidation.apply_verdicts = applying
    client = Client()
    try:
        for _ in range(count):
            to, body = events.take()
            doing[0] = "POST"
            answer = client.post(
                f"/api/v1/t/{to}/events", data=body, content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {tokens[to]}",
            )  # fmt: skip
            doing[0] = "recording"
            done = invalidation.run_invalidation(answer.json()["assessment_id"])
            assert done.state == "done", done.error
            doing[0] = "sequencing"
            sequencer.sequence(done.tenant_id)
    finally:
        sequencer.lock_head = heads.lock_head
        invalidation.apply_verdicts = apply_verdicts
    out = {"events": count, "per_event_ms": round(sum(ms for _, ms in found) / count, 1)}
    for label in ("POST", "recording", "applying", "sequencing"):
        times = [ms for what, ms in found if what == label]
        out[label] = {
            "transactions": len(times),
            "median_ms": _r(statistics.median(times)) if times else None,
        }
    return out


class Phase:
    """CPU of this process and of its own database backend, and statements, per named phase."""

    def __init__(self):
        self.totals: dict[str, list[float]] = {}
        self.database = (
            DatabaseCpu(connection.settings_dict["NAME"]) if connection.vendor == "postgresql" else None
        )
        self.statements = 0
        self.shapes: dict[str, list] = {}

    def count(self, execute, sql, params, many, context):
        self.statements += 1
        started = time.process_time()
        try:
            return execute(sql, params, many, context)
        finally:
            shape = self.shapes.setdefault(" ".join(sql.split()[:6])[:70], [0, 0, 0.0])
            shape[0] += 1
            shape[1] += len(params or ())
            shape[2] += time.process_time() - started

    def __call__(self, name: str, work, *args, **kwargs):
        db = self._db()  # first: reading /proc is this bench's own work, not the phase's
        own, statements = time.process_time(), self.statements
        with connection.execute_wrapper(self.count):
            result = work(*args, **kwargs)
        own, statements = time.process_time() - own, self.statements - statements
        figures = self.totals.setdefault(name, [0.0, 0.0, 0])
        figures[0] += own
        figures[1] += self._db() - db
        figures[2] += statements
        return result

    def _db(self) -> float:
        return self.database.seconds() if self.database else 0.0


def profile(events: Events, count: int, tokens: dict[str, str], top: int, dump: str | None) -> dict:
    """`count` events one at a time in this process, as chain_hold runs them: the CPU
    milliseconds of each phase (this process, and its database backend on PostgreSQL) and its
    statements, an event; then cProfile's `top` functions by own time over all three phases.
    Jev's answers are the stand-in's, in its own process (its CPU is not counted here)."""
    import cProfile
    import pstats

    from django.test import Client

    client, phase = Client(), Phase()
    profiler = cProfile.Profile(time.process_time)  # CPU, not waiting on the database or Jev
    connection.ensure_connection()
    standin = start(
        [sys.executable, "manage.py", "jev_standin", "--port", str(STANDIN_PORT), "--latency-ms", "0"]
    )
    try:
        throwaway.wait_for_port(STANDIN_PORT, "the stand-in")
        _profile_events(events, count, tokens, client, phase, None)
        totals = phase.totals
        shapes = sorted(phase.shapes.items(), key=lambda kv: -kv[1][2])[:15]
        _profile_events(events, count, tokens, client, Phase(), profiler)  # timed apart: cProfile costs CPU
    finally:
        throwaway.stop(standin)
    out = {
        name: {"cpu_ms": round(own * 1000 / count, 1), "database_ms": round(db * 1000 / count, 1),
               "statements": round(statements / count, 1)}
        for name, (own, db, statements) in totals.items()
    }  # fmt: skip
    say(f"{'phase':<10} {'CPU ms':>8} {'database ms':>12} {'statements':>11}   (an event, {count} events)")
    for name, f in out.items():
        say(f"{name:<10} {f['cpu_ms']:>8} {f['database_ms']:>12} {f['statements']:>11}")
    say(f"\nstatements by CPU in this process (its driver's work), {count + 3} events:")
    for text, (n, params, cpu) in shapes:
        say(f"{n:>6} {params / n:>8.0f} params {cpu * 1000 / (count + 3):>7.2f} ms an event  {text}")
    stats = pstats.Stats(profiler)
    if dump:
        stats.dump_stats(dump)
        say(f"cProfile's figures in {dump} (python -m pstats {dump})")
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out


def _profile_events(events, count, tokens, client, phase, profiler) -> None:
    """The worker's and the sequencer's phases are their Celery tasks' bodies, run here."""
    from memory_review.assessments.tasks import run_assessment
    from memory_review.audit.tasks import sequence

    tenants = dict(Tenant.objects.values_list("slug", "pk"))
    for n in range(count + 3):
        if n == 3:  # the first events warm caches: not counted
            phase.totals.clear()
        to, body = events.take()
        if profiler:
            profiler.enable()
        answer = phase(
            "POST", client.post, f"/api/v1/t/{to}/events", data=body, content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {tokens[to]}",
        )  # fmt: skip
        state = phase("worker", run_assessment, tenants[to], answer.json()["assessment_id"])
        assert state == "done", state
        phase("sequencer", sequence, tenants[to])
        if profiler:
            profiler.disable()


def measure(args, tokens: list[dict[str, str]], broker: redis.Redis) -> dict:
    """Stand-in and web up, then each pool size's rising steps; everything it started stopped."""
    pools = [int(n) for n in args.workers.split(",") if n]
    rates = [float(r) for r in args.rates.split(",")]
    # SQLite's work is inside the web's and workers' processes.
    postgres = connection.vendor == "postgresql"
    processes = []
    sampler = Sampler(broker, DatabaseCpu(connection.settings_dict["NAME"]) if postgres else None)
    try:
        standin = start(
            [sys.executable, "manage.py", "jev_standin", "--port", str(STANDIN_PORT),
             "--latency-ms", str(args.latency_ms)],
        )  # fmt: skip
        processes.append(standin)
        # As shipped, when there is one; the address and size are the run's.
        conf = ROOT / "memory_review" / "gunicorn_conf.py"
        web = start(
            [sys.executable, "-m", "gunicorn", *(["-c", str(conf)] if conf.exists() else []),
             "memory_review.wsgi:application", "--bind", f"127.0.0.1:{WEB_PORT}",
             "--workers", str(args.web_workers)],
        )  # fmt: skip
        processes.append(web)
        throwaway.wait_for_port(STANDIN_PORT, "the stand-in")
        throwaway.wait_for_port(WEB_PORT, "gunicorn")
        threads = args.pool == "threads"
        say(
            f"gunicorn: {args.web_workers} workers ({'gunicorn_conf.py' if conf.exists() else 'no conf'}); "
            f"stand-in at {args.latency_ms:.0f} ms; JEV_MAX_CONCURRENCY {settings.JEV_MAX_CONCURRENCY}, "
            f"JEV_REQUESTS_PER_MINUTE {settings.JEV_REQUESTS_PER_MINUTE} a process"
            f"{' (a threads worker: times its threads, but what the run names)' if threads else ''}; "
            f"{args.step_seconds:g} s a step\n"
        )
        roots = {"web": [web.pid], "standin": [standin.pid]}
        events, hold = Events(args.customers, args.memories_each, args.spread), None
        if args.chain_hold:
            hold = chain_hold(events, args.chain_hold, tokens[0])
            say(
                f"audit chain head held {hold['per_event_ms']:.0f} ms an event (in one process, "
                f"{args.chain_hold} events): the POST's transaction {hold['POST']['median_ms']} ms, "
                f"recording {hold['recording']['median_ms']} ms, "
                f"applying {hold['applying']['median_ms']} ms, "
                f"the sequencer's run {hold['sequencing']['median_ms']} ms (medians)\n"
            )
        agents = Agents(tokens, events, args.batch, args.burst)
        sampler.start()
        if pools:
            say(HEADER)
        follower = Follower(Tenant.objects.order_by("pk").first())
        runs = [run_pool(n, rates, args, agents, sampler, roots, follower) for n in pools]
        return {"chain_hold": hold, "runs": runs}
    finally:
        sampler.stopping.set()
        for process in processes:
            throwaway.stop(process)
        if sampler.is_alive():
            sampler.join(timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers", default="1,2,4", help="the pool's size (processes or threads), a run each"
    )
    parser.add_argument(
        "--pool",
        choices=("prefork", "threads"),
        default="prefork",
        help="Celery's pool: processes or threads",
    )
    parser.add_argument(
        "--hosts", type=int, default=1, help="Celery workers, each as a host of its own (folder, settings)"
    )
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--memories-each", type=int, default=100)
    parser.add_argument(
        "--history", type=int, default=0, metavar="N",
        help="each memory with N earlier votes behind it (N past events a customer), as after months",
    )  # fmt: skip
    parser.add_argument("--tenants", type=int, default=1, help="the customers spread over this many tenants")
    parser.add_argument(
        "--skew", metavar="W,W,...", help="tenants of uneven size: a weight each (7,1,1,1: one has 70%%)"
    )
    parser.add_argument(
        "--burst", type=float, default=0, metavar="S",
        help="events arrive in bursts: each S seconds' worth at the start of its S seconds",
    )  # fmt: skip
    parser.add_argument("--agents", type=int, default=16, help="agents posting, a token each")
    parser.add_argument("--rates", default="1,2,3,4,6,8,10,12,14,16,20,24,28,32", help="events/s, rising")
    parser.add_argument("--step-seconds", type=float, default=30)
    parser.add_argument("--drain-seconds", type=float, default=180)
    parser.add_argument("--latency-ms", type=float, default=150)
    parser.add_argument(
        "--batch", type=int, default=1, metavar="N", help="post N events a request (POST events/batch)"
    )
    parser.add_argument("--chain-hold", type=int, default=0, metavar="N", help="first time N events' hold")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N",
        help="instead of the run: N events in this process, CPU and statements by phase, and cProfile",
    )  # fmt: skip
    parser.add_argument("--profile-top", type=int, default=25, help="how many functions cProfile lists")
    parser.add_argument("--profile-out", metavar="FILE", help="where to keep cProfile's figures")
    parser.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    try:
        weights = [int(w) for w in args.skew.split(",")] if args.skew else [1] * args.tenants
    except ValueError:
        weights = []
    if not weights or min(weights) < 1:
        parser.error(f"--skew takes a whole weight of at least 1 a tenant, not {args.skew!r}")
    if args.skew and args.tenants not in (1, len(weights)):
        parser.error(f"--skew {args.skew} names {len(weights)} tenants, --tenants {args.tenants}")
    if args.burst < 0:
        parser.error(f"--burst is seconds, at least 0, not {args.burst:g}")
    if args.customers < sum(weights):
        parser.error(f"--customers {args.customers} leaves a tenant without one ({sum(weights)} weights)")
    if args.history < 0:
        parser.error(f"--history is earlier votes a memory, at least 0, not {args.history}")
    if args.batch < 1:
        parser.error(f"--batch is events a POST, at least 1, not {args.batch}")
    args.spread, args.tenants = Tenants(weights), len(weights)
    broker = redis.Redis.from_url(BROKER)
    speed = {"before": machine.speed()}
    say(f"this machine: {machine.describe(speed['before'])}")
    try:
        call_command("migrate", verbosity=0)
        built = time.monotonic()
        tokens = build(args.customers, args.memories_each, args.agents, args.spread, args.history)
        say(
            f"{connection.vendor}: {args.customers:,} customers x {args.memories_each} memories in "
            f"{args.tenants} tenant(s){' weighted ' + args.skew if args.skew else ''} "
            f"({Memory.objects.count():,}; {Verdict.objects.count():,} earlier votes) built in "
            f"{time.monotonic() - built:.0f} s; {args.agents} agents"
        )
        if args.profile:
            events = Events(args.customers, args.memories_each, args.spread)
            measured = {
                "profile": profile(events, args.profile, tokens[0], args.profile_top, args.profile_out),
                "runs": [],
            }
        else:
            measured = measure(args, tokens, broker)
    finally:
        broker.flushdb()
        connection.close()
        throwaway.drop()
    speed["after"] = machine.speed()
    say(f"\nthis machine afterwards: {machine.describe(speed['after'])}")
    unit = "thread" if args.pool == "threads" else "pool process"
    for r in measured["runs"]:
        say(
            f"{r['workers']} {unit}(s): sustained {r['sustained_per_s']:.1f} events/s "
            f"(offered {r['sustained_offered_per_s']:g}), most completed in a step {r['ceiling_per_s']:.1f}/s"
        )
    print(json.dumps({
        "database": connection.vendor, "web_workers": args.web_workers, "agents": args.agents,
        "tenants": args.tenants, "skew": args.skew, "burst_seconds": args.burst,
        "customers": args.customers, "memories_each": args.memories_each, "history": args.history,
        "latency_ms": args.latency_ms, "batch": args.batch, "pool": args.pool,
        "step_seconds": args.step_seconds, "jev_max_concurrency": settings.JEV_MAX_CONCURRENCY,
        "jev_requests_per_minute": settings.JEV_REQUESTS_PER_MINUTE, "machine": speed, **measured,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
