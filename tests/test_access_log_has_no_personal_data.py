"""The logs keep no person's words (issue 27, item 5): the servers' access lines write the path
and never the query string or referrer, where search words and the agents' user ids travel, and
the app's own lines name ids, not a memory's subject or a person's note. An erasure cannot reach
a log line, so nothing it would have to erase is written there."""

import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone

from memory_review.assessments import recovery
from memory_review.assessments.invalidation import observe_event
from memory_review.assessments.models import Assessment
from memory_review.lifecycle import Actor, transition
from memory_review.memories import expiry
from memory_review.memories.services import event_record
from memory_review.tenancy.tokens import token_create
from tests.factories import make_memory

NAME, USER_ID = "Dana Whitfield", "cust-dana-4471"
SEARCH = "q=Dana+Whitfield"  # the memories page's search box
SCOPE = f"user_id={USER_ID}"  # what an agent asks the API for
SHIPPED = settings.BASE_DIR / "memory_review" / "gunicorn_conf.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(command: list[str], port: int, tmp_path, **env) -> subprocess.Popen:
    """A server of this checkout on `port`, on a throwaway SQLite file (the paths asked here
    read no table), once it answers /healthz."""
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    environment.update(
        DJANGO_SETTINGS_MODULE="tests.settings", SQLITE_PATH=str(tmp_path / "db.sqlite3"), **env
    )
    server = subprocess.Popen(
        command, env=environment, cwd=settings.BASE_DIR, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    for _ in range(150):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    pytest.fail(f"the server did not answer: {server.communicate()[1][-2000:]}")


def ask_with_a_name(port: int) -> None:
    """A page, a 404 and a search by name, each with the previous search as its referrer, and a
    request line gunicorn refuses."""
    referrer = {"Referer": f"http://127.0.0.1:{port}/t/acme/memories/?{SEARCH}"}
    asked = (
        "/healthz?" + SEARCH,
        "/nowhere?" + SEARCH,
        "/t/acme/memories/?" + SEARCH,
        "/api/v1/t/acme/memories?" + SCOPE,
    )
    for path in asked:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=referrer)
        try:
            urllib.request.urlopen(request, timeout=10).close()
        except urllib.error.HTTPError:
            pass  # a 404, a 401: logged all the same
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /x?{SEARCH} HTTP/1.1 one-word-too-many\r\nHost: 127.0.0.1\r\n\r\n".encode())
        sock.recv(1024)


def stopped(server: subprocess.Popen) -> tuple[str, str]:
    os.killpg(server.pid, signal.SIGTERM)
    return server.communicate(timeout=30)


def test_gunicorns_access_lines_are_made_of_fields_that_carry_no_query_string():
    config: dict = {}
    exec(SHIPPED.read_text(), config)

    fields = set(re.findall(r"%\(([^)]*)\)s", config["access_log_format"]))

    # Not r (the request line), q (the query), f (the referrer), u (a Basic-auth name), nor any
    # header ({...}i) or environ entry ({...}e: QUERY_STRING, RAW_URI).
    assert fields <= {"h", "t", "m", "U", "H", "s", "b", "a", "T", "D", "M", "L", "p"}
    assert {"m", "U", "s"} <= fields  # what was asked and how it went


def test_a_real_gunicorn_logs_the_path_of_a_search_by_name_and_not_the_name(tmp_path):
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "-c", str(SHIPPED)]
    server = serve(
        command, port, tmp_path, WEB_BIND=f"127.0.0.1:{port}", WEB_CONCURRENCY="1", WEB_ACCESS_LOG="-"
    )

    ask_with_a_name(port)
    access, errors = stopped(server)

    assert '"GET /t/acme/memories/ HTTP/1.1" 302' in access
    assert '"GET /api/v1/t/acme/memories HTTP/1.1" 401' in access
    assert "Invalid request from ip=127.0.0.1" in errors  # gunicorn's own line for the bad request
    assert "Dana" not in access + errors
    assert USER_ID not in access + errors


def test_runservers_request_lines_keep_the_path_and_drop_the_query(tmp_path):
    port = free_port()
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks"]
    server = serve(command, port, tmp_path)

    ask_with_a_name(port)
    _, requests = stopped(server)

    assert '"GET /t/acme/memories/ HTTP/1.1" 302' in requests
    assert "Dana" not in requests
    assert USER_ID not in requests


@pytest.mark.django_db
def test_a_search_by_name_and_an_api_read_by_user_id_leave_no_trace_in_any_log(client, lead, acme, caplog):
    make_memory(acme, subject=NAME, content=f"{NAME} wants invoices in euros.", user_id=USER_ID)
    agent = {"HTTP_AUTHORIZATION": f"Bearer {token_create(tenant=acme, name='support-bot')[1]}"}
    client.force_login(lead)
    caplog.set_level(logging.DEBUG)

    found = client.get(f"/t/acme/memories/?{SEARCH}")
    read = client.get(f"/api/v1/t/acme/memories?{SCOPE}", **agent)
    missing = client.get(f"/t/acme/nowhere/?{SEARCH}")
    refused = client.get(f"/api/v1/t/acme/memories?{SCOPE}&limit={NAME}", **agent)

    assert NAME in found.content.decode() and NAME in read.content.decode()  # the words were there
    assert (missing.status_code, refused.status_code) == (404, 400)
    assert "Not Found: /t/acme/nowhere/" in caplog.text  # Django's request log: the path alone
    assert "Dana" not in caplog.text
    assert USER_ID not in caplog.text


@pytest.mark.django_db
def test_the_ttl_sweep_losing_a_race_logs_the_memorys_id_not_its_subject(acme, caplog, monkeypatch):
    soon = timezone.now() + timedelta(hours=1)
    memory = make_memory(acme, subject=NAME, valid_until=soon)

    def a_person_freezes_it_first(**move):
        transition(
            obj=memory,
            action="freeze",
            actor=Actor("user", "7"),
            reason="hold",
            seen_version=memory.row_version,
        )
        return transition(**move)

    monkeypatch.setattr(expiry, "transition", a_person_freezes_it_first)
    caplog.set_level(logging.DEBUG)
    with time_machine.travel(soon + timedelta(seconds=1)):
        assert expiry.expire_past_ttl() == 0

    assert f"memory {memory.pk} not expired by the sweep: StaleVersion" in caplog.text
    assert "Dana" not in caplog.text


@pytest.mark.django_db
def test_a_retry_logs_the_restart_and_not_the_leads_note(acme, policy, lead, caplog):
    make_memory(acme, subject="delivery-address", content="Deliveries go to the Paris office.")
    event = event_record(tenant=acme, source="chat", text="Deliveries go to the Lyon office now.")
    assessment = observe_event(event=event, enqueue=lambda a: None)
    Assessment.objects.filter(pk=assessment.pk).update(state="failed", finished_at=timezone.now())
    caplog.set_level(logging.DEBUG)

    restart = recovery.retry_failed(assessment=assessment, actor=f"user:{lead.pk}", note=f"{NAME} is waiting")

    assert (
        f"assessment {assessment.pk} handed to a worker again by user:{lead.pk} (restart {restart.pk})"
        in caplog.text
    )
    assert "Dana" not in caplog.text
