"""The attack drill (bench/attack_drill.py) at its small size, against this test run's live server
on PostgreSQL: every URL pattern as every role, own and other tenant, GET and POST, the API
fuzzed from its schemas, wrong passwords, oversized bodies, bad tokens. The full size's figures
are in BENCHMARKS.md."""

import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.demo_data import seed_demo

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="runs once, in make test's PostgreSQL pass: the drill takes a minute and a half",
    ),
    pytest.mark.django_db(transaction=True),
]


def test_the_drill_finds_no_leak_no_5xx_and_no_write_from_a_refused_request(live_server, settings):
    from attack_drill import run_drill

    settings.JEV_STANDIN_URL = "http://127.0.0.1:9"  # no Jev: /readyz says so, and nothing needs it
    seed_demo()

    # Crafted values at every parameter: tests/web/test_crafted_input.py sends the same through the
    # test client on both databases, in a tenth of the time the live server takes.
    findings, summary = run_drill(live_server.url, size="small", crafted=False)

    assert summary["requests"] > 1000
    assert findings.server_errors == []
    assert findings.leaks == []
    assert findings.refused_writes == []
    assert summary["statuses"].get(404, 0) > 100  # the other tenant's pages and objects hide
    assert any("then the right one: 429" in note for note in findings.notes)  # the lockout held
