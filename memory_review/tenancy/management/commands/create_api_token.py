from django.core.management.base import BaseCommand, CommandError

from memory_review.tenancy.models import Tenant
from memory_review.tenancy.tokens import token_create


class Command(BaseCommand):
    help = "Create an API token for a tenant's agents. The token is printed once and stored hashed."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--name", default="agent", help="who uses it, e.g. support-bot")
        parser.add_argument("--expires-days", type=int, help="it stops working after this many days")

    def handle(self, *args, tenant, name, expires_days=None, **options):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        try:
            _, token = token_create(tenant=found, name=name, expires_in_days=expires_days)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(token)
