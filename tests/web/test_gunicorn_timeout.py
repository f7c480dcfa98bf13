"""A long download finishes through gunicorn as shipped (issue 17, item 5): the audit export is
streamed to a client that reads slowly, for longer than a deliberately short worker timeout,
through memory_review/gunicorn_conf.py (threaded workers), and arrives whole. The same download through a
sync worker is cut off, which is what the shipped file changed.

PostgreSQL only: gunicorn is another process, and must see the rows this test commits."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from memory_review.tenancy.models import Role
from tests.factories import long_trail, make_user

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]

TIMEOUT_S = 2
ROWS = 20_000  # about 9.6 MiB of JSONL: past what the kernel's socket buffers hold (4 MiB)
READ_RATE = 1_000_000  # bytes a second the client takes: the server's thread waits on the socket


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def gunicorn(request):
    """gunicorn on a free loopback port, started with the shipped file and a short timeout;
    `request.param` adds arguments (another worker class)."""
    port = free_port()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "1",
        "AUDIT_KEY": settings.AUDIT_KEY,
        "AUDIT_KEY_ID": settings.AUDIT_KEY_ID,
    }
    command = [
        sys.executable, "-m", "gunicorn", "-c", str(settings.BASE_DIR / "memory_review" / "gunicorn_conf.py"),
        "--timeout", str(TIMEOUT_S), *getattr(request, "param", []),
    ]  # fmt: skip
    server = subprocess.Popen(
        command, env=env, cwd=settings.BASE_DIR, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        server.kill()
        pytest.fail(f"gunicorn did not answer: {server.stderr.read()[-2000:]}")
    yield port, server
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


@pytest.fixture
def an_auditors_session(acme):
    auditor = make_user("acme-auditor", acme, Role.AUDITOR)
    long_trail(acme, ROWS)
    client = Client()
    client.force_login(auditor)
    return client.cookies["sessionid"].value


def slow_download(port: int, path: str, session: str) -> tuple[bytes, float]:
    """GET `path` and read the body at READ_RATE through a small receive buffer, so the server's
    thread waits on the socket for most of the download."""
    started = time.monotonic()
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: sessionid={session}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        received = bytearray()
        while chunk := sock.recv(64 * 1024):
            received += chunk
            time.sleep(max(0.0, len(received) / READ_RATE - (time.monotonic() - started)))
    return bytes(received), time.monotonic() - started


def body_of(response: bytes) -> bytes:
    """The chunked body of an HTTP/1.1 answer, put together."""
    head, _, rest = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    body, at = bytearray(), 0
    while (size := int(rest[at : rest.index(b"\r\n", at)], 16)) > 0:
        start = rest.index(b"\r\n", at) + 2
        body += rest[start : start + size]
        at = start + size + 2
    return bytes(body)


def test_a_download_longer_than_the_worker_timeout_arrives_whole(gunicorn, an_auditors_session):
    port, _ = gunicorn

    response, took = slow_download(port, "/t/acme/audit/export.jsonl", an_auditors_session)

    lines = body_of(response).decode().splitlines()
    assert took > 3 * TIMEOUT_S  # the worker outlived its timeout three times over
    assert json.loads(lines[0])["complete"] is True
    assert len(lines) == 1 + ROWS
    assert json.loads(lines[-1])["seq"] == ROWS


# One thread: with more, gunicorn runs gthread whatever the worker class says.
@pytest.mark.parametrize("gunicorn", [["--worker-class", "sync", "--threads", "1"]], indirect=True)
def test_a_sync_worker_cuts_the_same_download_off_which_is_why_the_file_ships_threads(
    gunicorn, an_auditors_session
):
    port, server = gunicorn

    response, _ = slow_download(port, "/t/acme/audit/export.jsonl", an_auditors_session)

    assert f'"seq": {ROWS},'.encode() not in response  # killed mid-stream: the last row never came
    os.killpg(server.pid, signal.SIGTERM)
    assert "WORKER TIMEOUT" in server.communicate(timeout=30)[1]
