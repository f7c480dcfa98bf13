"""`make demo`'s supervisor: a child that dies is restarted and the terminal says so; the others
(the web server above all) keep running; one that dies at every start is left stopped."""

import io
import os
import subprocess
import sys
import time

import pytest
from django.core.management.color import no_style

from memory_review.demo.management.commands.run_demo import Supervisor

LIVES = [sys.executable, "-c", "import time; time.sleep(60)"]
DIES = [sys.executable, "-c", "import sys; sys.exit(3)"]


@pytest.fixture
def supervisor():
    out, err = io.StringIO(), io.StringIO()
    made = []

    def make(commands):
        made.append(Supervisor(commands, dict(os.environ), out, err, no_style()))
        return made[-1]

    yield make, err
    for sup in made:
        sup.stop()


def wait_exit(process: subprocess.Popen) -> None:
    process.wait(timeout=10)


def test_a_dead_worker_is_restarted_and_the_web_server_keeps_running(supervisor):
    make, err = supervisor
    sup = make([("worker", LIVES), ("web", LIVES)])
    sup.start("worker"), sup.start("web")
    web, worker = sup.processes["web"], sup.processes["worker"]
    sup.started["worker"] -= 60  # it had been running a minute: not a quick death

    worker.kill()
    wait_exit(worker)
    sup.check()

    assert sup.processes["web"] is web and web.poll() is None
    assert sup.processes["worker"] is not worker and sup.processes["worker"].poll() is None
    assert "worker stopped (exit code -9): restarting it" in err.getvalue()


def test_a_child_that_dies_at_every_start_is_left_stopped_and_the_rest_carry_on(supervisor, monkeypatch):
    make, err = supervisor
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # no back-off wait in a test
    sup = make([("beat", DIES), ("web", LIVES)])
    sup.start("beat"), sup.start("web")

    for _ in range(Supervisor.RESTARTS + 1):
        wait_exit(sup.processes["beat"])
        sup.check()

    assert "beat" not in sup.processes
    assert sup.processes["web"].poll() is None
    assert err.getvalue().count("beat stopped (exit code 3): restarting it") == Supervisor.RESTARTS
    assert "left stopped; the rest of the demo keeps running" in err.getvalue()


def test_the_development_server_sends_without_waiting_for_the_clients_ack():
    """The demo's runserver (and the tests' live server) set TCP_NODELAY on each connection
    (demo/apps.py): with Nagle's algorithm, a kept-alive browser waited 44 ms on every response."""
    import socket
    import threading

    from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer

    seen = {}

    class Recording(WSGIRequestHandler):
        def handle(self):
            seen["nodelay"] = self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            super().handle()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    server = WSGIServer(("127.0.0.1", 0), Recording)
    server.set_app(app)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    with socket.create_connection(server.server_address, timeout=5) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert client.recv(100).startswith(b"HTTP/1.1 200")
    thread.join(5)
    server.server_close()
    assert seen["nodelay"] != 0
