"""Queries per page do not grow with the data (issue 17, item 2; issue 29, item 3): bench/pages.py
builds the same two tenants at two sizes, four times apart, with the shapes real tenants make
(a memory whose history is four times longer at the larger size, a supersession chain four times
longer, a hub, a busy day for the tenant built last, a customer with many memories), and counts
the queries of every page it times (each role's screens, the API's reads, the admin) for the
tenant built first and the one built last. A page that reads a row at a time, follows a chain a
version a query, or lists with an N+1, differs between the two by its rows, not by one or two.

Runs in make test's PostgreSQL pass (the script makes and drops a database of its own on the same
server), both sizes at once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1500, 6000)
# A page may take another bounded path at the larger size, never more than this many queries
# apart: a search past the matches it counts reads a stretch (paging.searched_page) where it read
# the few by id, the audit trail by a common subject walks its windows (at most
# WALK_MOST / WINDOW of them), a memory page counts a history longer than a page, and people's
# names are read when a person moved something shown. The shapes grow four times between the
# sizes (3,001 moves against 751, a chain of 300 against 75, a busy day of 1,500 against 375): a
# page reading a row at a time, or a version a query, differs by hundreds.
BOUNDED = 6

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="runs once, in make test's PostgreSQL pass (where the planner and the shapes are real)",
)


def server() -> str:
    settings = connection.settings_dict
    return f"postgres://{settings['USER']}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}"


def test_every_page_asks_as_many_queries_of_a_tenant_four_times_larger(tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "DATABASE_"))}
    env.pop("SECRET_KEY", None)
    env["VAR_DIR"] = str(tmp_path)
    running = {
        n: subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench" / "pages.py"),
                "--memories",
                str(n),
                "--repeats",
                "1",
                "--tenants",
                "2",
                "--postgres",
                server(),
                "--in-process",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for n in SIZES
    }
    pages = {}
    for n, process in running.items():
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-2000:]
        figures = json.loads(out.strip().splitlines()[-1])
        assert figures["tenants"] == ["bench", "bench2"] and figures["backend"] == "postgresql"
        pages[n] = {
            f"{name} ({tenant})": page["queries"]
            for tenant in ("pages", "last")
            for name, page in figures[tenant].items()
        }
    small, large = (pages[n] for n in SIZES)

    assert small.keys() == large.keys() and len(small) > 2 * 70
    grew = {name: (small[name], large[name]) for name in small if large[name] != small[name]}
    beyond = {name: counts for name, counts in grew.items() if abs(counts[1] - counts[0]) > BOUNDED}
    if beyond:
        pytest.fail(f"queries grew with the data: {json.dumps(beyond)} (all that differ: {json.dumps(grew)})")
