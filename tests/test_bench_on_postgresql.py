"""What the bench measures only on PostgreSQL, at a tiny size, in make test's PostgreSQL pass
(tests/test_bench_scripts.py runs every script on SQLite in the other)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the WAL is PostgreSQL's: make test's PostgreSQL pass runs this"
)


def test_observe_event_reports_the_wal_each_event_wrote(tmp_path):
    """The WAL figure (bench/observe_event.py) is what the index cut of issue 30 was measured by:
    it must come from the server, for each run, and be the size of an event's writes."""
    db = connection.settings_dict
    server = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "DATABASE_"))}
    env.pop("SECRET_KEY", None)
    env["VAR_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "observe_event.py"), "--events", "2", "--latency-ms", "5",
         "--sizes", "20", "--postgres", server],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])["runs"]
    # Twenty verdicts, their seals and one move: some tens of KiB (a checkpoint's full pages, or a
    # neighbour's writes, may add some); in bytes or MiB by mistake, it would fall outside.
    assert [run["mode"] for run in runs] == ["concurrent", "baseline"]
    assert all(4 < run["wal_kib"] < 8192 for run in runs), [run["wal_kib"] for run in runs]
