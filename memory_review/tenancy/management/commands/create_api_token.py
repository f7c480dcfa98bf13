from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory_review.tenancy.models import Tenant
from memory_review.tenancy.tokens import token_authenticate, token_create


class Command(BaseCommand):
    help = "Create an API token for a tenant's agents. The token is printed once and stored hashed."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--name", default="agent", help="who uses it, e.g. support-bot")
        parser.add_argument("--expires-days", type=int, help="it stops working after this many days")
        parser.add_argument(
            "--file",
            type=Path,
            help="keep the token in this file: one already there that still works for the tenant is "
            "kept (`make demo`: a database made anew gets a new token, not a stale one)",
        )

    def handle(self, *args, tenant, name, expires_days=None, file=None, **options):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        if file is not None and file.is_file():
            held = token_authenticate(file.read_text().strip())
            if held is not None and held.tenant_id == found.pk:
                return
        try:
            _, token = token_create(tenant=found, name=name, expires_in_days=expires_days)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(token + "\n")
            file.chmod(0o600)
            return
        self.stdout.write(token)
