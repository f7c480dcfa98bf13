"""Probes, metrics and logs: what compose, an orchestrator and an on-call engineer read."""

import io
import json
import logging

import pytest
from django.test import Client
from prometheus_client import REGISTRY

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.integrity.db_context import tenant_context
from memory_review.lifecycle import Actor, transition
from memory_review.memories.services import event_record
from memory_review.ops import logs
from tests.factories import make_memory, memory_in

CLOSED_PORT = "http://127.0.0.1:9"  # discard: nothing listens


def test_healthz_answers_without_touching_anything():
    response = Client().get("/healthz")

    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.fixture(autouse=True)
def fresh_readiness(settings):
    settings.JEV_READY_CACHE_S = 0  # each test asks Jev itself


def test_probes_answer_whatever_host_they_are_called_by(settings):
    settings.ALLOWED_HOSTS = ["memory-review.example.com"]

    assert Client().get("/healthz", HTTP_HOST="10.1.2.3:8000").status_code == 200
    assert Client().get("/accounts/login/", HTTP_HOST="10.1.2.3:8000").status_code == 400


@pytest.mark.django_db
def test_readyz_is_ready_when_database_broker_and_jev_answer(standin, settings):
    settings.JEV_STANDIN_URL = standin.url
    settings.TYPESAFE_API_KEY = ""

    response = Client().get("/readyz")

    assert response.status_code == 200, response.json()
    assert response.json() == {"status": "ready", "database": "ok", "broker": "ok", "jev": "ok"}


@pytest.mark.django_db
def test_readyz_names_what_is_down(settings):
    settings.JEV_STANDIN_URL = CLOSED_PORT
    settings.TYPESAFE_API_KEY = ""
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"

    response = Client().get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready" and body["database"] == "ok"
    assert body["broker"] == "unreachable (ConnectionError)" and body["jev"] == "unreachable (ConnectError)"
    assert "127.0.0.1" not in response.content.decode()  # no host, port or DSN for an anonymous caller


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.django_db
def test_metrics_show_each_tenants_queue_and_count_transitions(
    acme, globex, django_capture_on_commit_callbacks
):
    for _ in range(3):
        memory_in(acme, "needs_review")
    memory_in(globex, "needs_review")
    before = sample("memory_review_transitions_total", actor_kind="user", action="freeze")
    memory = make_memory(acme)
    with django_capture_on_commit_callbacks(execute=True):
        transition(obj=memory, action="freeze", actor=Actor("user", "1"), reason="pin", seen_version=1)

    text = Client().get("/metrics").content.decode()

    assert 'memory_review_review_queue_depth{tenant="acme"} 3.0' in text
    assert 'memory_review_review_queue_depth{tenant="globex"} 1.0' in text
    assert 'memory_review_memories{status="frozen",tenant="acme"} 1.0' in text
    assert 'memory_review_assessments{state="queued",tenant="acme"} 0.0' in text
    assert sample("memory_review_transitions_total", actor_kind="user", action="freeze") == before + 1
    assert 'memory_review_transitions_total{action="freeze",actor_kind="user"}' in text


@pytest.mark.django_db
def test_metrics_count_jev_requests_and_finished_assessments(acme, policy, jev):
    requests = sample("memory_review_jev_requests_total", outcome="ok")
    done = sample("memory_review_assessments_finished_total", purpose="invalidation", state="done")
    make_memory(acme, subject="delivery-address", content="Deliveries go to the Paris office.")
    event = event_record(tenant=acme, source="chat", text="Deliveries go to Lyon now.")
    with tenant_context(acme.pk):
        run_invalidation(observe_event(event=event, enqueue=lambda a: None).pk, jev=jev)

    assert sample("memory_review_jev_requests_total", outcome="ok") > requests
    assert (
        sample("memory_review_assessments_finished_total", purpose="invalidation", state="done") == done + 1
    )
    text = Client().get("/metrics").content.decode()
    assert "memory_review_jev_request_seconds_bucket" in text and "memory_review_jev_cost_usd_total" in text


@pytest.mark.django_db
def test_metrics_are_for_this_host_or_a_bearer_token(acme, settings):
    settings.METRICS_TOKEN = "scrape-secret"

    assert Client().get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 403
    assert (
        Client().get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    )
    allowed = Client().get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer scrape-secret")
    assert allowed.status_code == 200
    # A proxy on this host: loopback is then anyone on the internet.
    proxied = Client().get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert proxied.status_code == 403


@pytest.fixture
def json_log():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


@pytest.mark.django_db
def test_a_request_logs_with_its_request_id(json_log):
    response = Client().get("/no-such-page/")

    entries = [e for e in json_log() if "Not Found" in e["message"]]
    assert entries and entries[0]["request_id"] == response["X-Request-ID"]
    assert entries[0]["level"] == "WARNING" and entries[0]["tenant_id"] is None


def test_a_record_carries_tenant_and_assessment_when_set(json_log):
    with logs.bound(logs.assessment_id, 42), logs.bound(logs.request_id, "req-1"):
        from memory_review.integrity import db_context

        token = db_context._current.set(7)
        try:
            logging.getLogger("django.request").warning("judging")
        finally:
            db_context._current.reset(token)

    entry = json_log()[-1]
    assert (entry["message"], entry["request_id"], entry["tenant_id"], entry["assessment_id"]) == (
        "judging",
        "req-1",
        7,
        42,
    )


def test_in_multiprocess_mode_each_process_counts_into_a_file_named_by_host_and_pid(tmp_path):
    """Containers sharing the directory each have their own pid 7: a file named by pid alone
    would be written by two processes."""
    import os
    import socket
    import subprocess
    import sys

    code = (
        "from memory_review.ops import metrics\n"
        "metrics.TRANSITIONS.labels('user', 'freeze').inc()\n"
        "from prometheus_client import CollectorRegistry, generate_latest, multiprocess\n"
        "registry = CollectorRegistry(); multiprocess.MultiProcessCollector(registry)\n"
        "print(generate_latest(registry).decode())\n"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr

    assert 'memory_review_transitions_total{action="freeze",actor_kind="user"} 2.0' in result.stdout
    assert all(f"_{socket.gethostname()}-" in path.name for path in tmp_path.iterdir())
