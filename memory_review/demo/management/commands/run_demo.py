"""`make demo`'s last step: the stand-in (when there is no API key), a Celery worker, Celery beat
and the web server, together, until Ctrl-C."""

import os
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand

from memory_review.assessments.jev import uses_standin


def reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=1):
            return True
    except OSError:
        return False


class Command(BaseCommand):
    help = "Run the demo: Jev stand-in (without TYPESAFE_API_KEY), a Celery worker and the web server."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))

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
            standin_port = urlsplit(settings.JEV_STANDIN_URL).port or 8765
            commands.append(
                ("Jev stand-in", [*manage, "jev_standin", "--port", str(standin_port), "--latency-ms", "120"])
            )
            self.stdout.write(
                f"No TYPESAFE_API_KEY: votes come from the offline stand-in on {settings.JEV_STANDIN_URL}."
            )
        celery = [sys.executable, "-m", "celery", "-A", "memory_review", "worker"]
        commands.append(("worker", [*celery, "--loglevel=WARNING", "--concurrency=2"]))
        # Periodic jobs: the signed audit checkpoints (AUDIT_CHECKPOINT_MINUTES).
        schedule = str(settings.VAR_DIR / "celerybeat-schedule")
        commands.append(("beat", [sys.executable, "-m", "celery", "-A", "memory_review", "beat",
                                  "--loglevel=WARNING", "--schedule", schedule]))  # fmt: skip
        # The demo shows what users see: friendly error pages, not Django's debug pages (which
        # list every URL and setting). runserver --insecure still serves the static files.
        env.setdefault("DEBUG", "false")
        web = [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"]
        debug = env["DEBUG"].strip().lower() in ("1", "true", "yes", "on")
        commands.append(("web", web if debug else [*web, "--insecure"]))
        processes = []
        try:
            for name, command in commands:
                processes.append((name, subprocess.Popen(command, env=env)))
            self.stdout.write(
                self.style.SUCCESS(f"memory-review: http://127.0.0.1:{port}/ (Ctrl-C stops it)")
            )
            while all(process.poll() is None for _, process in processes):
                time.sleep(0.5)
            stopped = [name for name, process in processes if process.poll() is not None]
            self.stderr.write(f"stopped unexpectedly: {', '.join(stopped)}")
        except KeyboardInterrupt:
            pass
        finally:
            for _, process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for _, process in processes:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
