"""A database the benchmarks fill and throw away: a temporary SQLite file, or, with
`--postgres URL` on the command line, a new database on that PostgreSQL server (or, with
`--reuse URL-or-path`, one an earlier run kept with BENCH_KEEP=1). Import this before Django is
set up; call drop() when done.

It also gives the run throwaway keys and settings of its own (bench/settings.py: production's,
with static files read from the finders), so every script runs on a fresh clone after
`make install` alone: no var/secret-key, no audit key, no collectstatic, nothing of the demo's
touched."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PG_SERVER = sys.argv[sys.argv.index("--postgres") + 1] if "--postgres" in sys.argv else None
PG_DB = f"bench_{os.getpid()}"
# A database an earlier run kept (BENCH_KEEP=1 printed its address): measured again, not dropped.
REUSE = sys.argv[sys.argv.index("--reuse") + 1] if "--reuse" in sys.argv else None

if REUSE:
    PG_SERVER = None
    if REUSE.startswith("postgres"):
        os.environ["DATABASE_URL"] = REUSE
    else:
        os.environ.pop("DATABASE_URL", None)
        os.environ["SQLITE_PATH"] = REUSE
elif PG_SERVER:
    import psycopg

    with psycopg.connect(f"{PG_SERVER.rstrip('/')}/postgres", autocommit=True) as server:
        server.execute(f"CREATE DATABASE {PG_DB}")
    os.environ["DATABASE_URL"] = f"{PG_SERVER.rstrip('/')}/{PG_DB}"
else:
    os.environ.pop("DATABASE_URL", None)
    os.environ["SQLITE_PATH"] = str(Path(tempfile.mkdtemp()) / "bench.sqlite3")
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
os.environ["DEBUG"] = "false"  # timed as production runs
os.environ["TYPESAFE_API_KEY"] = ""
os.environ["SECRET_KEY"] = "bench-only-" + os.urandom(24).hex()  # a throwaway database's keys
os.environ["AUDIT_KEY"] = os.urandom(32).hex()
os.environ["AUDIT_KEY_ID"] = "bench"
os.environ["AUDIT_CHECKPOINT_DIR"] = tempfile.mkdtemp(prefix="bench-checkpoints-")
os.environ.setdefault("CACHE_URL", "locmem://")
os.environ.setdefault("CELERY_BROKER_URL", "memory://")  # no Redis needed; a task stays in its process
# No worker runs here to take the sequencer's runs: audit rows are linked in the writer's
# transaction (docs/audit.md, "Sequencing"). bench/throughput.py, which runs workers, defers.
os.environ.setdefault("AUDIT_SEQUENCER", "inline")
os.environ.setdefault("LOG_LEVEL", "WARNING")  # the figures, not the log


def drop() -> None:
    """Remove the PostgreSQL database (a temporary SQLite file goes with its folder); with
    BENCH_KEEP=1 keep it, for EXPLAIN and the like, and say where it is."""
    if os.environ.get("BENCH_KEEP") or REUSE:
        print(f"kept: {os.environ.get('DATABASE_URL') or os.environ['SQLITE_PATH']}", file=sys.stderr)
        return
    if not PG_SERVER:
        return
    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{PG_SERVER.rstrip('/')}/postgres", autocommit=True) as server:
        server.execute(f"DROP DATABASE {PG_DB}")


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve() -> tuple[str, subprocess.Popen]:
    """This checkout's `runserver` on a free loopback port, on the throwaway database and with the
    same settings (it inherits the environment); answers (base URL, process) once /healthz does."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runserver", f"127.0.0.1:{port}", "--noreload"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(f"{base}/healthz", "the throwaway server")
    except SystemExit:
        server.kill()
        raise
    return base, server


# 120 s: with every bench script starting at once (tests/test_bench_scripts.py) beside the
# PostgreSQL pass on 2 cores, 20 s, 30 s and then 60 s ran out (the last with sample_draw.py added).
STARTS_WITHIN = 120


def wait_until_answers(url: str, what: str, *, seconds: float = STARTS_WITHIN) -> None:
    """Return once `url` answers 2xx; SystemExit naming `what` when it has not within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{what} did not answer {url} within {seconds:.0f} s")


def wait_for_port(port: int, what: str, *, seconds: float = STARTS_WITHIN) -> None:
    """Return once something listens on the loopback `port`; SystemExit naming `what` if not."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{what} did not start within {seconds:.0f} s")


def stop(*processes: subprocess.Popen | None) -> None:
    """Stop each process's group (started with start_new_session): asked, then told."""
    for process in processes:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
