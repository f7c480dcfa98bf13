from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory_review.lifecycle import Actor, LifecycleError
from memory_review.memories.erasure import erase_subject
from memory_review.tenancy.db_context import tenant_context
from memory_review.tenancy.models import Membership, Tenant


class Command(BaseCommand):
    help = (
        "Right to forget: erase a person's events, memories, candidates and label notes in a tenant, in "
        "one transaction, keeping the rows, their audit trail and a proof. Where the tenant keeps the "
        "two-person rule, name the lead or admin who asked and another who confirms."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--user-id", required=True, help="the scope user id whose data is erased")
        parser.add_argument("--reason", required=True, help="why (kept with the proof; never quote the data)")
        parser.add_argument("--requested-by", metavar="USERNAME", help="the lead or admin who asked")
        parser.add_argument(
            "--confirmed-by", metavar="USERNAME", help="the second lead or admin (two-person rule)"
        )

    def handle(self, *args, tenant, user_id, reason, requested_by=None, confirmed_by=None, **options):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        asked = self._lead(found, requested_by) if requested_by else None
        confirmed = self._lead(found, confirmed_by) if confirmed_by else None
        if found.two_person_rule and (asked is None or confirmed is None or asked == confirmed):
            raise CommandError(
                f"{found.slug} keeps the two-person rule: name the lead or admin who asked "
                "(--requested-by) and another who confirms (--confirmed-by)"
            )
        with tenant_context(found.pk):
            try:
                erasure = erase_subject(
                    tenant=found, user_id=user_id, reason=reason,
                    requested_by=str(Actor.user(asked)) if asked else "system:erase_subject",
                    confirmed_by=str(Actor.user(confirmed)) if confirmed else None,
                )  # fmt: skip
            except LifecycleError as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"erasure {erasure.pk} for user {erasure.user_id} in {found.slug}: "
            f"{erasure.events_erased} events, {erasure.memories_erased} memories, "
            f"{erasure.candidates_erased} candidates, "
            f"{erasure.labels_cleared} label notes; proof {erasure.proof_hash}"
        )

    def _lead(self, tenant: Tenant, username: str):
        user = get_user_model().objects.filter(username=username).first()
        membership = Membership.objects.filter(tenant=tenant, user=user).first() if user else None
        if membership is None or not membership.can_lead:
            raise CommandError(f"{username!r} is not a lead or admin of {tenant.slug}")
        return user
