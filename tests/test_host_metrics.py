"""A worker host's counts reach Prometheus (memory_review/ops/host_metrics.py): what the host's
processes counted into its PROMETHEUS_MULTIPROC_DIR, added up, for this host or a bearer token."""

import os
import subprocess
import sys

import pytest

from memory_review.ops import host_metrics

COUNTED_ELSEWHERE = "from memory_review.ops import metrics; metrics.JEV_REQUESTS.labels('ok').inc(3)"


@pytest.fixture
def worker_host(tmp_path, monkeypatch):
    """A directory two worker processes counted into, as a worker host's would be."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", COUNTED_ELSEWHERE], env=env, check=True, timeout=60)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setenv("METRICS_TOKEN", "s3cret-token")


def scrape(**environ) -> tuple[str, str]:
    answered = {}

    def start_response(status, headers):
        answered["status"] = status

    body = b"".join(host_metrics.app({"PATH_INFO": "/metrics", **environ}, start_response))
    return answered["status"], body.decode()


def test_it_adds_up_what_the_hosts_processes_counted(worker_host):
    status, body = scrape(REMOTE_ADDR="127.0.0.1")

    assert status == "200 OK"
    assert 'memory_review_jev_requests_total{outcome="ok"} 6.0' in body


def test_another_host_needs_the_token(worker_host):
    assert scrape(REMOTE_ADDR="10.1.2.3")[0] == "403 Forbidden"
    assert scrape(REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer wrong")[0] == "403 Forbidden"
    assert scrape(REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer s3cret-token")[0] == "200 OK"


def test_a_request_a_proxy_on_this_host_forwarded_is_not_this_hosts(worker_host):
    assert scrape(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9")[0] == "403 Forbidden"
