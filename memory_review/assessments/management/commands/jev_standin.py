from django.core.management.base import BaseCommand, CommandError

from memory_review.assessments.standin import FAULTS, StandinConfig, StandinServer


class Command(BaseCommand):
    help = (
        "Serve the offline Jev stand-in (POST /v1/systemone, GET /v1/models) on 127.0.0.1. "
        "A deterministic test double that speaks TypeSafe's wire format: never a model."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8765)
        parser.add_argument("--latency-ms", type=float, default=0, help="added to every answer")
        parser.add_argument("--rate-429", type=float, default=0, help="share of requests answered 429")
        parser.add_argument("--retry-after", type=float, default=1, help="seconds, sent with each 429")
        parser.add_argument("--rate-500", type=float, default=0)
        parser.add_argument("--rate-hang", type=float, default=0, help="share that hang past the timeout")
        parser.add_argument("--hang-s", type=float, default=30)
        parser.add_argument("--rate-malformed", type=float, default=0)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--script", default="", help=f"comma-separated first answers: {', '.join(FAULTS)}, ok"
        )

    def handle(self, *args, **o):
        try:
            config = StandinConfig(
                latency_ms=o["latency_ms"],
                rate_429=o["rate_429"],
                retry_after_s=o["retry_after"],
                rate_500=o["rate_500"],
                rate_hang=o["rate_hang"],
                hang_s=o["hang_s"],
                rate_malformed=o["rate_malformed"],
                seed=o["seed"],
                script=[step for step in o["script"].split(",") if step],
            )
            server = StandinServer(config, port=o["port"])
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Jev offline stand-in (a test double, not a model) on {server.url}")
        try:
            server.run_forever()
        except KeyboardInterrupt:
            pass
