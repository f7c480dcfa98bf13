"""Queries per page do not grow with the data (issue 17, item 2): bench/pages.py builds the same
year-shaped tenant at two sizes, four times apart, and counts the queries of every page it times
(each role's screens, the API's reads, the admin). A page that reads a row at a time, or a list
with an N+1, differs between the two by its rows, not by one or two.

Runs in make test's SQLite pass (the script's own database), both sizes at once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1500, 6000)
# Pages that ask one or two more questions only when their rows call for them, whatever the size.
CONDITIONAL = {
    "api_in_force": "people's names when a person decided about one of the customer's memories, and "
    "the moves when there are any",
    "api_as_of": "the moves up to then, when there were any",
    "memory_plain": "people's names when a person moved it",
}

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="runs once, in make test's SQLite pass (the script's own database)"
)


def test_every_page_asks_as_many_queries_of_a_tenant_four_times_larger(tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "DATABASE_"))}
    env.pop("SECRET_KEY", None)
    env["VAR_DIR"] = str(tmp_path)
    running = {
        n: subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "pages.py"), "--memories", str(n), "--repeats", "1"],
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
        pages[n] = {
            name: page["queries"] for name, page in json.loads(out.strip().splitlines()[-1])["pages"].items()
        }
    small, large = (pages[n] for n in SIZES)

    assert small.keys() == large.keys() and len(small) > 50
    grew = {name: (small[name], large[name]) for name in small if large[name] != small[name]}
    assert {name: counts for name, counts in grew.items() if name not in CONDITIONAL} == {}
    assert all(abs(large - small) <= 2 for small, large in grew.values()), grew
