from django.core.management.base import BaseCommand, CommandError

from memory_review.tenancy.models import ApiToken, Tenant
from memory_review.tenancy.tokens import token_revoke


class Command(BaseCommand):
    help = "List a tenant's API tokens (name, prefix, state, last used), or revoke one by its prefix."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--revoke", metavar="PREFIX", help="revoke this token: a 401 from now on")

    def handle(self, *args, tenant, revoke=None, **options):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        tokens = ApiToken.objects.filter(tenant=found).order_by("created_at")
        if revoke:
            token = tokens.filter(prefix=revoke).first()
            if token is None:
                raise CommandError(f"no token with prefix {revoke!r} in {found.slug}")
            token_revoke(token=token, by="system:api_tokens")
            self.stdout.write(f"revoked {token.name} ({token.prefix}…)")
            return
        for token in tokens:
            used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
            until = f"{token.expires_at:%Y-%m-%d}" if token.expires_at else "no expiry"
            self.stdout.write(
                f"{token.prefix}  {token.name:<24} {token.state:<8} last used {used:<16} {until}"
            )
