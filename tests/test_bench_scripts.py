"""Every script in bench/ runs as written, on nothing but `make install` (issue 15, item 10): each
here at a tiny size, in a process of its own, with its own throwaway database, keys and settings
(bench/throwaway.py). A script the application's code moved away from (a renamed helper, a new
required setting) fails here, not on the day someone wants its figures.

The SQLite pass runs them (the scripts' default database); the attack drill's walk is
tests/web/test_attack_drill.py's, against the PostgreSQL pass's live server."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests import chromium

ROOT = Path(__file__).resolve().parent.parent
TINY = {
    "calibration.py": ["--cases", "500", "--runs", "1"],
    "stored_replay.py": ["--verdicts", "2000"],
    "labeling.py": ["--verdicts", "1000", "--labels", "3"],
    "audit_export.py": ["--rows", "500"],
    "verify_audit.py": ["--sizes", "400"],
    "observe_event.py": ["--events", "1", "--latency-ms", "5", "--sizes", "20", "--phases"],
    "pages.py": ["--memories", "400", "--repeats", "1", "--tenants", "2"],
    "review_browser.py": ["--decisions", "2", "--cold-loads", "1"],
    "calibration_paint.py": ["--cold-loads", "1"],
    "agent_loop.py": ["--memories", "400", "--repeats", "5", "--posts", "2", "--decisions", "2"],
    "webhooks.py": ["--changes", "60", "--decisions", "3", "--kill-at", "10"],
    "isolation.py": ["--rounds", "1", "--pollers", "6", "--seconds", "2"],
    "throughput.py": (
        "--customers 20 --workers 1 --rates 2 --step-seconds 3 --chain-hold 2 --skew 3,1 --burst 1 --batch 2"
        " --history 2"
    ).split(),
    "sample_draw.py": ["--memories", "3000", "--repeats", "1"],
    "health_after_label.py": ["--memories", "400"],
}
NOT_FIGURES = {"throwaway.py", "settings.py", "fill.py", "attack_drill.py", "redis_db.py", "machine.py"}

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="runs once, in make test's SQLite pass (the scripts' own database)"
)


def test_every_script_is_listed():
    assert {path.name for path in (ROOT / "bench").glob("*.py")} - NOT_FIGURES == set(TINY)


def test_every_script_runs_on_a_fresh_checkout_and_prints_its_figures(tmp_path):
    scripts = dict(TINY)
    if not (chromium.CHROMIUM and chromium.DRIVER):
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium and chromium-driver (.ci/run does)")
        del scripts["review_browser.py"], scripts["calibration_paint.py"]  # Chromium; the rest still run
    # What a fresh shell has: none of the suite's settings, keys or database.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "DATABASE_"))}
    env.pop("SECRET_KEY", None)
    env["VAR_DIR"] = str(tmp_path)  # nothing of a developer's var/ is read or written
    # All at once (each has its own database): the suite waits for the slowest, not the sum.
    running = {
        script: subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / script), *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for script, args in scripts.items()
    }
    failed, figures = {}, {}
    for script, process in running.items():
        out, err = process.communicate(timeout=300)
        if process.returncode != 0:
            failed[script] = err[-2000:]
            continue
        figures[script] = json.loads(out.strip().splitlines()[-1])  # the last line is the figures

    assert failed == {}
    assert all(isinstance(found, dict) and found for found in figures.values())
    # Uneven tenants (--skew 3,1) are each timed: every event posted is counted under its tenant.
    # Batches of two take turns 3 to 1; the warm-up's one batch was the first tenant's, so the
    # step's three are two of the first tenant's and one of the second's. A POST refused on a busy
    # machine is counted as posted, not accepted; each accepted event is done and timed.
    step = figures["throughput.py"]["runs"][0]["steps"][0]
    tenants = step["post_to_done_by_tenant_ms"]
    assert [(t["tenant"], t["posted"]) for t in tenants] == [("bench0", 4), ("bench1", 2)], step
    assert [t["events"] for t in tenants] == [t["accepted"] for t in tenants], step
    assert sum(t["accepted"] for t in tenants) == step["accepted"] > 0, step
    # A batch (--batch 2) holds its tenant's own customers' events: each is judged against its
    # customer's 100 memories, none against an empty scope in the wrong tenant.
    assert step["candidates_mean"] == 100
    # --phases: the concurrent run says where its event's time went, each step timed (the bench's
    # event moves one memory: it has votes, checks and a move); the baseline is left untimed.
    concurrent, baseline = figures["observe_event.py"]["runs"]
    timed = ("lease", "candidates", "Jev", "votes", "checks", "moves")
    assert all(concurrent["phases_ms"][phase] > 0 for phase in timed), concurrent
    # ... and its CPU: every phase's within the event's, which is within its time.
    cpu = concurrent["phases_cpu_ms"]
    assert 0 < cpu["all"] <= concurrent["phases_ms"]["all"] * 1.05 and cpu["Jev"] > 0, cpu
    assert sum(cpu[p] for p in (*timed, "recording_rest")) <= cpu["all"] * 1.05, cpu
    assert "phases_ms" not in baseline and "phases_cpu_ms" not in baseline
    # An agent follows the first tenant's feed: it heard every change the step wrote there.
    feed = step["feed_lag_ms"]
    assert feed["heard"] == feed["written"] and feed["refused"] == {}
    assert not (tmp_path / "audit-key.json").exists()  # the runs' keys were their own, thrown away
    # The CPU figures' benches time the machine's speed as they start and end (bench/machine.py).
    for script in ("throughput.py", "observe_event.py", "verify_audit.py"):
        for when in ("before", "after"):
            speed = figures[script]["machine"][when]
            assert speed["bare_loop_s"] > 0 and speed["cpus"] >= 1 and speed["load_1m"] >= 0, (script, speed)
    assert 0 <= step["machine_steal_percent"] <= 100 * (os.cpu_count() or 1), step
    # ... and the CPU an event without the stand-in's, which runs here only in Jev's place.
    assert 0 < step["machine_cpu_ms_per_event_without_standin"] < step["machine_cpu_ms_per_event"], step


def test_the_throughput_bench_profiles_an_event_by_phase(tmp_path):
    """`--profile`: the CPU each phase of an event costs, which the figures in BENCHMARKS.md
    (issue 30, item 3) rest on; each phase must have run and cost something."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "DATABASE_"))}
    env.pop("SECRET_KEY", None)
    env["VAR_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "throughput.py"), "--customers", "4", "--profile", "3",
         "--profile-top", "3", "--profile-out", str(tmp_path / "p.prof")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    phases = json.loads(done.stdout.strip().splitlines()[-1])["profile"]
    assert set(phases) == {"POST", "worker", "sequencer"}
    assert all(phase["cpu_ms"] > 0 and phase["statements"] > 0 for phase in phases.values())
    assert (tmp_path / "p.prof").stat().st_size > 0


def test_a_runs_redis_database_is_free_for_the_next_once_it_ends():
    """bench/redis_db.py: a run holds its database by a key for a day, so a run killed outright
    cannot be emptied under the next; one that ends gives it back."""
    import redis

    env = {key: value for key, value in os.environ.items() if key != "BENCH_BROKER_URL"}
    taken = subprocess.run(
        [sys.executable, "-c", "import redis_db; print(redis_db.free_redis_database())"],
        cwd=ROOT / "bench", env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip

    assert taken.startswith("redis://127.0.0.1:6379/")
    assert redis.Redis.from_url(taken).get("bench-run:owner") is None
