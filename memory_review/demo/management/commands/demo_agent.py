"""`manage.py demo_agent`: the demo's agent (memory_review/demo/agent.py), run by `make demo`
beside the web server. It speaks only HTTP, with the API token `make demo` made."""

import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory_review.demo.agent import DemoAgent, Refused, webhook_port


def demo_webhook_port(base_url: str) -> int:
    parts = urlsplit(base_url)
    return webhook_port(parts.port or (443 if parts.scheme == "https" else 80))


class Command(BaseCommand):
    help = (
        "A small agent: caches a tenant's memories in force from the change feed and its webhooks, "
        "logs each change it hears (a forget made in the browser, within seconds), and sends usage "
        "receipts for simulated answers."
    )

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--tenant", default="acme")
        parser.add_argument("--token-file", type=Path, default=settings.VAR_DIR / "api-token")
        parser.add_argument(
            "--webhook-port",
            type=int,
            help="Receive webhooks on this loopback port (default: the web server's port + 766, or a free "
            "one when that is taken); -1: none.",
        )
        parser.add_argument("--answer-every", type=float, default=20.0, help="Seconds between answers.")

    def handle(self, *args, base_url, tenant, token_file, webhook_port, answer_every, **options):
        if not token_file.is_file():
            raise CommandError(f"no API token in {token_file}: `make demo` writes one (create_api_token)")
        self._wait_for(base_url)
        agent = DemoAgent(
            base_url,
            token_file.read_text().strip(),
            tenant=tenant,
            state_file=settings.VAR_DIR / f"demo-agent-webhook-{tenant}.json",
            write=lambda line: (self.stdout.write(line), self.stdout.flush()),
            answer_every=answer_every,
        )
        if webhook_port is None:
            webhook_port = demo_webhook_port(base_url)
        try:
            agent.run(webhook_port=None if webhook_port < 0 else webhook_port)
        except Refused as exc:
            raise CommandError(f"memory-review refused the agent: {exc}") from exc
        except KeyboardInterrupt:
            pass

    def _wait_for(self, base_url: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                httpx.get(f"{base_url}/healthz", timeout=2, trust_env=False)
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise CommandError(
                        f"the web server at {base_url} did not answer within {seconds:.0f} s"
                    ) from None
                time.sleep(0.5)
