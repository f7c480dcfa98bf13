"""`make demo`'s last step: the stand-in (when there is no API key), a Celery worker, Celery beat
and the web server, together, until Ctrl-C."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.core.management import call_command
from django.core.management.base import BaseCommand

from memory_review.assessments.jev import uses_standin
from memory_review.demo.agent import loopback_port, webhook_port

STANDIN_PORT_OFFSET = 765  # the stand-in beside the web server: 8765 beside 8000


def reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=1):
            return True
    except OSError:
        return False


def standin_url(port: int) -> str:
    """Where the demo's Jev stand-in listens: JEV_STANDIN_URL when it is set, else the demo's port
    + 765 on loopback (8765 beside 8000), or a free one when that is taken, so a second demo on the
    machine starts its own stand-in instead of failing to bind the first one's."""
    if os.environ.get("JEV_STANDIN_URL"):
        return settings.JEV_STANDIN_URL
    return f"http://127.0.0.1:{loopback_port(port + STANDIN_PORT_OFFSET)}"


def agent_command(manage: list[str], port: int) -> tuple[str, list[str]]:
    """The demo's agent (demo/agent.py) and the WEBHOOK_ALLOW_NETWORKS entry for its receiver.
    It follows acme's change feed and hears its webhooks on loopback, which production refuses as
    a webhook target: the demo lets that one port in (not all of loopback: a webhook aimed at
    Redis on 6379 was delivered). The port follows the demo's (PORT + 766, or a free one when
    that is taken), so a second demo on the machine has its own."""
    hooks = webhook_port(port)
    command = [*manage, "demo_agent", "--base-url", f"http://127.0.0.1:{port}", "--webhook-port", str(hooks)]
    return f"127.0.0.1:{hooks}", command


class Supervisor:
    """Runs the children and keeps them running: one that dies is restarted (and the terminal
    says so), the others carry on. One that keeps dying within seconds of its start is left
    stopped after RESTARTS tries, with the reason on the terminal."""

    RESTARTS, QUICK_DEATH_S = 5, 10.0

    def __init__(self, commands, env, stdout, stderr, style):
        self.commands, self.env = dict(commands), env
        self.stdout, self.stderr, self.style = stdout, stderr, style
        self.processes: dict[str, subprocess.Popen] = {}
        self.started: dict[str, float] = {}
        self.quick_deaths: dict[str, int] = {}

    def start(self, name: str) -> None:
        self.processes[name] = subprocess.Popen(self.commands[name], env=self.env)
        self.started[name] = time.monotonic()

    def run(self, port: int) -> None:
        try:
            for name in self.commands:
                self.start(name)
            self.stdout.write(
                self.style.SUCCESS(f"memory-review: http://127.0.0.1:{port}/ (Ctrl-C stops it)")
            )
            while self.processes:
                time.sleep(0.5)
                self.check()
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def check(self) -> None:
        """Restart every child that has stopped since the last look."""
        for name, process in list(self.processes.items()):
            if process.poll() is not None:
                self.restart(name, process.returncode)

    def restart(self, name: str, code: int) -> None:
        quick = time.monotonic() - self.started[name] < self.QUICK_DEATH_S
        self.quick_deaths[name] = self.quick_deaths.get(name, 0) + 1 if quick else 0
        if self.quick_deaths[name] > self.RESTARTS:
            del self.processes[name]
            self.stderr.write(
                f"{name} stopped (exit code {code}) {self.RESTARTS + 1} times within seconds of starting: "
                "left stopped; the rest of the demo keeps running. Its output above says why."
            )
            return
        self.stderr.write(self.style.WARNING(f"{name} stopped (exit code {code}): restarting it"))
        if quick:
            time.sleep(min(2 ** self.quick_deaths[name], 10))
        self.start(name)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


class Command(BaseCommand):
    help = "Run the demo: Jev stand-in (without TYPESAFE_API_KEY), a Celery worker and the web server."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))

    def collect_static(self) -> None:
        """`collectstatic` when a source file is newer than the last collection (hashing and
        compressing every file takes seconds; a demo started again should not wait for it)."""
        manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
        sources = (storage.path(path) for finder in get_finders() for path, storage in finder.list(None))
        newest = max(os.stat(path).st_mtime for path in sources)
        if manifest.is_file() and manifest.stat().st_mtime >= newest:
            return
        self.stdout.write("Collecting static files for WhiteNoise (the first time takes a few seconds)")
        call_command("collectstatic", interactive=False, verbosity=0)

    def handle(self, *args, port, **options):
        env = dict(os.environ)
        if not reachable(settings.CELERY_BROKER_URL):
            env["CELERY_BROKER_URL"] = "filesystem://"
            (settings.VAR_DIR / "broker").mkdir(parents=True, exist_ok=True)
            self.stdout.write(
                self.style.WARNING(
                    f"Redis is not reachable at {settings.CELERY_BROKER_URL}: the worker uses a "
                    "broker that needs no server (files under var/broker)."
                )
            )
        else:
            self.stdout.write(f"Celery broker: {settings.CELERY_BROKER_URL}")
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        commands = []
        if uses_standin():
            standin = standin_url(port)
            env["JEV_STANDIN_URL"] = standin
            standin_port = str(urlsplit(standin).port)
            commands.append(
                ("Jev stand-in", [*manage, "jev_standin", "--port", standin_port, "--latency-ms", "120"])
            )
            self.stdout.write(f"No TYPESAFE_API_KEY: votes come from the offline stand-in on {standin}.")
        celery = [sys.executable, "-m", "celery", "-A", "memory_review", "worker"]
        commands.append(("worker", [*celery, "--loglevel=WARNING", "--concurrency=2", "-Q", "celery"]))
        # Webhook tries on a worker of their own: a slow receiver never holds up a judgment.
        commands.append(
            (
                "webhooks worker",
                [*celery, "--loglevel=WARNING", "--concurrency=2", "-Q", "webhooks", "-n", "webhooks@%h"],
            )
        )
        # Periodic jobs: the signed audit checkpoints (AUDIT_CHECKPOINT_MINUTES).
        schedule = str(settings.VAR_DIR / "celerybeat-schedule")
        commands.append(("beat", [sys.executable, "-m", "celery", "-A", "memory_review", "beat",
                                  "--loglevel=WARNING", "--schedule", schedule]))  # fmt: skip
        # The demo runs as production does: DEBUG off (friendly error pages, not Django's debug
        # pages that list every URL and setting), static files collected and served by WhiteNoise.
        env.setdefault("DEBUG", "false")
        self.collect_static()
        commands.append(("web", [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"]))
        allowed, agent = agent_command(manage, port)
        env.setdefault("WEBHOOK_ALLOW_NETWORKS", allowed)
        if (settings.VAR_DIR / "api-token").is_file():
            commands.append(("agent", agent))
        Supervisor(commands, env, self.stdout, self.stderr, self.style).run(port)
