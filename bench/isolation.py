"""One slow client against everyone else (issue 27, item 6), through real processes on loopback:

* **webhooks**: a judge worker (`-Q celery`, 1 process) and a webhooks worker (`-Q webhooks`,
  2 processes), as compose runs them, and the Jev stand-in. Another tenant's events, one at a
  time: from the event's commit to its judged change reaching that tenant's receiver. First
  with no slow receiver (the baseline), then while one tenant's receiver trickles its answer
  one byte every 8 s (the issue's attacker) with a backlog of deliveries to it;
* **long polls**: people's pages (a lead's home page and review queue, 4 readers in turn)
  through gunicorn as shipped (3 processes x 8 threads), with 0 long polls open, then 200
  clients long-polling the change feed (`wait=30`) from 100 tokens (2 each), then 200 from one
  token. The pollers honour Retry-After; the 429s are counted by the limit they name.

Redis, and PostgreSQL for figures (SQLite runs it at a tiny size, to prove the script works):

    .venv/bin/python bench/isolation.py --postgres postgres://postgres@127.0.0.1:5432 [--seconds 20]

The last line is one JSON object with every figure."""

import argparse
import collections
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import redis_db

BROKER = redis_db.free_redis_database()  # 12 is audit_export.py's, which the suite runs beside this
os.environ["CELERY_BROKER_URL"] = BROKER  # before settings load: this process queues on Redis too
os.environ["CACHE_URL"] = BROKER  # the long polls' and slow endpoints' counts, shared by every process
os.environ["CACHE_KEY_PREFIX"] = f"bench-isolation-{os.getpid()}"
os.environ["WEBHOOK_ALLOW_NETWORKS"] = "127.0.0.0/8"  # the receivers are on loopback

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

import redis  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from memory_review.agents import feed, webhooks  # noqa: E402
from memory_review.agents.models import WebhookAttempt  # noqa: E402
from memory_review.assessments.invalidation import observe_event  # noqa: E402
from memory_review.assessments.services import policy_ensure_default  # noqa: E402
from memory_review.assessments.standin import StandinConfig, StandinServer  # noqa: E402
from memory_review.integrity.context import acting_as  # noqa: E402
from memory_review.integrity.db_context import tenant_context  # noqa: E402
from memory_review.lifecycle import Actor  # noqa: E402
from memory_review.memories.services import event_record, memory_forget, memory_write  # noqa: E402
from memory_review.tenancy.models import Membership, Role, Tenant  # noqa: E402
from memory_review.tenancy.tokens import token_create  # noqa: E402
from tests.webhook_receiver import Receiver  # noqa: E402

ROUNDS = 5  # the other tenant's events in each case (--rounds)
PAGE_READERS = 4


def say(message: str) -> None:
    print(message, flush=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def figures(values: list[float]) -> dict:
    if not values:  # a tiny run's readers may finish before their warm-up ends
        return {"n": 0}
    return {
        "n": len(values),
        "median_ms": round(statistics.median(values), 1),
        "p95_ms": round(percentile(values, 95), 1),
        "max_ms": round(max(values), 1),
    }


def start(command: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        command, env=env, cwd=throwaway.ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor != "postgresql":  # a tiny run, to prove the script works
        return ""
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
    return f"postgres://{settings['USER']}@{host}:{port}/{settings['NAME']}"


# -- webhooks ---------------------------------------------------------------------------------


def judged_and_delivered(globex: Tenant, receiver: Receiver, rounds: range) -> list[float]:
    """From each event's commit to its judged change at the receiver, one event at a time."""
    took = []
    for n in rounds:
        customer = f"customer-{n}"
        with tenant_context(globex.pk), acting_as("agent:bench"):
            said = event_record(
                tenant=globex, source="chat", text="Deliveries go to the Paris office.", user_id=customer
            )
            memory_write(event=said, kind="fact", subject="delivery-address", content=said.text,
                         written_by="agent:bench", user_id=customer)  # fmt: skip
            before = len(receiver.received)
            began = time.perf_counter()
            event = event_record(tenant=globex, source="chat", user_id=customer,
                                 text="From now on deliveries go to the Lyon office instead.")  # fmt: skip
            observe_event(event=event)  # queued on commit: this is outside any transaction
        deadline = time.monotonic() + 120
        while len(receiver.received) <= before:
            if time.monotonic() > deadline:
                raise SystemExit(f"event {n}: its change did not reach the receiver within 120 s")
            time.sleep(0.02)
        took.append((time.perf_counter() - began) * 1000)
    return took


def webhook_isolation(acme: Tenant, globex: Tenant) -> dict:
    standin = StandinServer(StandinConfig(latency_ms=120))
    standin.__enter__()
    env = {**os.environ, "DATABASE_URL": database_url(), "JEV_STANDIN_URL": standin.url}
    celery = [sys.executable, "-m", "celery", "-A", "memory_review", "worker", "--pool=prefork",
              "--without-gossip", "--without-mingle", "--loglevel=ERROR"]  # fmt: skip
    workers = [
        start([*celery, "--concurrency=1", "-Q", "celery", f"--hostname=judge-{os.getpid()}@%h"], env),
        start([*celery, "--concurrency=2", "-Q", "webhooks", f"--hostname=hooks-{os.getpid()}@%h"], env),
    ]
    receiver, trickling = Receiver(), Receiver(trickle=8.0)
    try:
        with tenant_context(globex.pk), acting_as("agent:bench"):
            webhooks.endpoint_create(globex, url=receiver.url, kinds=["moved"], by="system:bench")
        time.sleep(4)  # the workers are up
        judged_and_delivered(globex, receiver, range(100, 101))  # warm-up: imports, connections
        baseline = judged_and_delivered(globex, receiver, range(ROUNDS))
        say(f"webhooks, no slow receiver: another tenant's event judged and delivered, {figures(baseline)}")

        with tenant_context(acme.pk), acting_as("agent:bench"):
            webhooks.endpoint_create(acme, url=trickling.url, by="system:bench")
            for n in range(8):  # a backlog for the slow endpoint: more than the webhook processes
                note = event_record(tenant=acme, source="chat", text=f"Note {n}.")
                memory = memory_write(event=note, kind="fact", subject=f"slow {n}", content=f"Fact {n}.",
                                      written_by="agent:bench")  # fmt: skip
                memory_forget(
                    memory=memory, actor=Actor("user", "1"), reason="asked", seen_version=memory.row_version
                )
        deadline = time.monotonic() + 60
        while not trickling.received and time.monotonic() < deadline:  # its first try has begun
            time.sleep(0.1)
        time.sleep(1)  # the first wave: the other process has met its deliveries too
        first_wave = len(trickling.received)  # its tries in flight as the first event is made
        slow = judged_and_delivered(globex, receiver, range(ROUNDS, 2 * ROUNDS))
        say(f"webhooks, one tenant's receiver trickling a byte every 8 s: {figures(slow)}; "
            f"its tries in flight at the first event: {first_wave}")  # fmt: skip
        tries = list(
            WebhookAttempt.objects.filter(delivery__endpoint__tenant=acme)
            .exclude(latency_ms=None)
            .values_list("latency_ms", "error")
        )
        say(f"  the trickling endpoint's tries ended: {len(tries)}, each within "
            f"{max((ms for ms, _ in tries), default=0)} ms; {tries[0][1] if tries else ''}")  # fmt: skip
        return {
            "baseline": figures(baseline),
            "trickling_receiver": figures(slow),
            "slow_tries_ended": len(tries),
            "slow_try_max_ms": max((ms for ms, _ in tries), default=None),
            "slow_requests_started": len(trickling.received),
            "slow_requests_in_flight_at_first_event": first_wave,
        }
    finally:
        throwaway.stop(*workers)
        trickling.stop()
        receiver.stop()
        standin.__exit__(None, None, None)


# -- long polls -------------------------------------------------------------------------------


def read_pages(port: int, cookie: str, paths: list[str], seconds: float) -> list[float]:
    latencies, stop_at = [], time.perf_counter() + seconds

    def reader(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        n = offset
        while (began := time.perf_counter()) < stop_at:
            conn.request("GET", paths[n % len(paths)], headers={"Cookie": cookie})
            response = conn.getresponse()
            response.read()
            assert response.status == 200, (paths[n % len(paths)], response.status)
            if n - offset >= 2:  # its connection and the process's warm-up
                latencies.append((time.perf_counter() - began) * 1000)
            n += 1

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(PAGE_READERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def pollers(
    port: int, tokens: list[str], count: int, after: int, until: threading.Event, answers: collections.Counter
):
    """`count` agents long-polling the feed in turn over `tokens`, honouring Retry-After."""

    def agent(token: str) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while not until.is_set():
            try:
                conn.request("GET", f"/api/v1/t/acme/changes?after={after}&wait=30",
                             headers={"Authorization": f"Bearer {token}"})  # fmt: skip
                response = conn.getresponse()
                body = response.read()
            except OSError:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                answers["connection error"] += 1
                until.wait(1)
                continue
            if response.status == 429:
                answers[f"429 {json.loads(body).get('limit', 'rate')}"] += 1
                until.wait(float(response.getheader("Retry-After", "1")))
            else:
                answers[str(response.status)] += 1

    threads = [
        threading.Thread(target=agent, args=(tokens[n % len(tokens)],), daemon=True) for n in range(count)
    ]
    for thread in threads:
        thread.start()
    return threads


def long_poll_isolation(acme: Tenant, seconds: float, crowd: int) -> dict:
    port = throwaway.free_port()
    env = {**os.environ, "WEB_BIND": f"127.0.0.1:{port}", "DATABASE_URL": database_url()}
    web = start(
        [sys.executable, "-m", "gunicorn", "-c", str(throwaway.ROOT / "memory_review" / "gunicorn_conf.py")],
        env,
    )
    client = Client()
    client.force_login(User.objects.get(username="bench-lead"))
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    paths = ["/t/acme/", "/t/acme/review/"]
    with tenant_context(acme.pk):
        many = [token_create(tenant=acme, name=f"agent-{n}")[1] for n in range(100)]
        one = [token_create(tenant=acme, name="one-agent")[1]]
        after = feed.head(acme)
    out = {}
    try:
        throwaway.wait_until_answers(f"http://127.0.0.1:{port}/healthz", "gunicorn")
        for case, tokens, count in [
            ("none", [], 0),
            (f"{crowd} from 100 tokens", many, crowd),
            (f"{crowd} from one token", one, crowd),
        ]:
            until, answers = threading.Event(), collections.Counter()
            threads = pollers(port, tokens, count, after, until, answers)
            time.sleep(3 if count else 0)  # the polls are open before the pages are read
            pages = read_pages(port, cookie, paths, seconds)
            until.set()
            for thread in threads:
                thread.join(timeout=40)
            out[case] = {**figures(pages), "long_poll_answers": dict(answers)}
            say(f"pages with {case} long polls open: {figures(pages)}; long polls answered {dict(answers)}")
    finally:
        throwaway.stop(web)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="how long the pages are read in each case"
    )
    parser.add_argument("--rounds", type=int, default=5, help="the other tenant's events in each case")
    parser.add_argument("--pollers", type=int, default=200, help="agents long-polling at once")
    parser.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    global ROUNDS
    ROUNDS = args.rounds  # the database was emptied as it was chosen (redis_db)
    call_command("migrate", verbosity=0)
    acme = Tenant.objects.create(slug="acme", name="Acme")
    globex = Tenant.objects.create(slug="globex", name="Globex")
    lead = User.objects.create_user("bench-lead", password="x")
    Membership.objects.create(user=lead, tenant=acme, role=Role.LEAD)
    for tenant in (acme, globex):
        policy_ensure_default(tenant=tenant, created_by="bench")
    out = {"database": connection.vendor}
    try:
        out["webhooks"] = webhook_isolation(acme, globex)
        out["long_polls"] = long_poll_isolation(acme, args.seconds, args.pollers)
    finally:
        redis.Redis.from_url(BROKER).flushdb()
        throwaway.drop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
