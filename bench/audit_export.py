"""An audit export of a long trail over HTTP, through gunicorn as shipped: streamed, and as a file
a Celery worker writes (issue 17, item 5).

    .venv/bin/python bench/audit_export.py [--rows 1000000] [--postgres URL]

Writes N hash-chained transitions for one tenant (in bulk, as the chain writes them), then starts
gunicorn with the shipped memory_review/gunicorn_conf.py (threaded workers, its default 30 s timeout) and a
Celery worker (as docker-compose runs one; on Redis when it answers, else the broker that needs no
server), and, as an auditor signed in over HTTP:

* **streamed**: GETs /t/bench/audit/export.jsonl and reads it to the end;
* **job**: POSTs the page's export button (over EXPORT_JOB_ABOVE_ROWS: a job), follows the job's
  page as the browser's htmx does until the worker is done, then downloads the file.

Reports rows/s, wall time, and the peak resident memory (VmHWM) of the gunicorn worker that served
and of the Celery pool process that wrote the file.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import django  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

JOB_FILES = tempfile.mkdtemp(prefix="bench-jobfiles-")
os.environ["JOB_FILES_DIR"] = JOB_FILES  # web and worker share it, as a volume would
django.setup()

import redis  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from memory_review.tenancy.models import Membership, Role, Tenant  # noqa: E402
from tests.factories import long_trail  # noqa: E402  (the trail as the chain writes it, in bulk)

ROOT = Path(__file__).resolve().parent.parent
BENCH_REDIS = "redis://127.0.0.1:6379/12"  # a database of its own: no developer's worker reads it


def build(rows: int) -> str:
    """The tenant, its auditor and the trail; the auditor's session cookie (no login throttle)."""
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    user = get_user_model().objects.create_user("bench-auditor", password="bench")
    Membership.objects.create(tenant=tenant, user=user, role=Role.AUDITOR)
    long_trail(tenant, rows)
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def broker() -> str:
    try:
        redis.Redis.from_url(BENCH_REDIS, socket_connect_timeout=1).ping()
        return BENCH_REDIS
    except redis.RedisError:
        return "filesystem://"


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (Linux's VmHWM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


def start(env: dict) -> tuple[subprocess.Popen, subprocess.Popen, int]:
    port = throwaway.free_port()
    env = {**env, "WEB_BIND": f"127.0.0.1:{port}"}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    conf = str(ROOT / "memory_review" / "gunicorn_conf.py")
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", conf],
                           env=env, cwd=ROOT, **quiet)  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "memory_review", "worker", "--concurrency=1",
         "--without-gossip", "--without-mingle", "--loglevel=WARNING"],
        env=env, cwd=ROOT, **quiet,
    )  # fmt: skip
    throwaway.wait_until_answers(f"http://127.0.0.1:{port}/healthz", "gunicorn")
    return web, worker, port


def request(port: int, method: str, path: str, cookies: dict, *, headers=None, body=b""):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    cookie = "; ".join(f"{name}={value}" for name, value in cookies.items())
    connection.request(method, path, body=body, headers={"Cookie": cookie, **(headers or {})})
    return connection, connection.getresponse()


def read_all(response) -> tuple[int, int]:
    size = lines = 0
    while chunk := response.read(1 << 20):
        size += len(chunk)
        lines += chunk.count(b"\n")
    return size, lines


def streamed(port: int, cookies: dict) -> dict:
    started = time.perf_counter()
    connection, response = request(port, "GET", "/t/bench/audit/export.jsonl", cookies)
    assert response.status == 200, response.status
    size, lines = read_all(response)
    connection.close()
    return {"seconds": time.perf_counter() - started, "bytes": size, "rows": lines - 1}


def csrf_token(port: int, cookies: dict) -> str:
    connection, response = request(port, "GET", "/t/bench/audit/", cookies)
    found = re.search(r"csrftoken=([^;]+)", response.getheader("Set-Cookie") or "")
    response.read()
    connection.close()
    return found.group(1)


def as_a_job(port: int, cookies: dict) -> dict:
    token = csrf_token(port, cookies)
    cookies = {**cookies, "csrftoken": token}
    started = time.perf_counter()
    form = {"Content-Type": "application/x-www-form-urlencoded", "X-CSRFToken": token, "Referer": "x"}
    connection, response = request(port, "POST", "/t/bench/audit/export.jsonl", cookies, headers=form)
    assert response.status == 302, response.status
    page = response.getheader("Location")
    response.read()
    connection.close()
    polls = 0
    while True:  # as the job's page does: its progress region, every 2 s (here every 0.5 s)
        connection, response = request(port, "GET", page, cookies, headers={"HX-Request": "true"})
        region = response.read().decode()
        connection.close()
        polls += 1
        if "state-done" in region or "state-failed" in region:
            break
        time.sleep(0.5)
    assert "state-done" in region, region
    written = time.perf_counter() - started
    connection, response = request(port, "GET", f"{page}download/", cookies)
    size, lines = read_all(response)
    connection.close()
    return {
        "seconds": time.perf_counter() - started, "written_s": written, "bytes": size, "rows": lines - 1,
        "polls": polls,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--postgres", metavar="URL")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    began = time.perf_counter()
    session = build(args.rows)
    print(f"{args.rows:,} transitions written in {time.perf_counter() - began:.0f} s")
    above = min(100_000, args.rows - 1)  # the shipped threshold, or less: the export is a job
    env = {**os.environ, "CELERY_BROKER_URL": broker(), "EXPORT_JOB_ABOVE_ROWS": str(above)}
    web, worker, port = start(env)
    try:
        cookies = {"sessionid": session}
        stream = streamed(port, cookies)
        job = as_a_job(port, cookies)
        web_peak = max(peak_rss_mib(pid) for pid in children(web.pid))
        worker_peak = max(peak_rss_mib(pid) for pid in children(worker.pid) or [worker.pid])
    finally:
        for process in (web, worker):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
    assert stream["rows"] == job["rows"] == args.rows, (stream["rows"], job["rows"])
    for name, run in (("streamed", stream), ("job", job)):
        print(f"{name}: {run['rows']:,} rows, {run['bytes'] / 2**20:.1f} MiB in {run['seconds']:.1f} s "
              f"({run['rows'] / run['seconds']:,.0f} rows/s)")  # fmt: skip
    print(f"  job: written by the worker in {job['written_s']:.1f} s, downloaded in "
          f"{job['seconds'] - job['written_s']:.1f} s")  # fmt: skip
    print(f"peak resident memory: gunicorn worker {web_peak:.0f} MiB, Celery worker {worker_peak:.0f} MiB")
    throwaway.drop()
    shutil.rmtree(JOB_FILES, ignore_errors=True)
    figures = {
        "rows": args.rows, "mib": round(stream["bytes"] / 2**20, 1),
        "streamed_s": round(stream["seconds"], 2), "streamed_rows_s": round(args.rows / stream["seconds"]),
        "job_s": round(job["seconds"], 2), "job_written_s": round(job["written_s"], 2),
        "job_rows_s": round(args.rows / job["seconds"]),
        "web_peak_mib": round(web_peak, 1), "worker_peak_mib": round(worker_peak, 1),
    }  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
