from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory_review.compliance import dual_control
from memory_review.compliance.erasure import erase_subject
from memory_review.integrity.db_context import tenant_context
from memory_review.lifecycle import Actor, LifecycleError
from memory_review.tenancy.models import Membership, Tenant


class Command(BaseCommand):
    help = (
        "Right to forget: erase a person's events, memories, candidates and every copy of their words "
        "in a tenant, in one transaction, keeping the rows, their audit trail and a proof. Where the "
        "tenant keeps the two-person rule this only asks: a second lead or admin confirms in the app "
        "(the erasures page), signed in; the command line never names who confirms."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--user-id", required=True, help="the scope user id whose data is erased")
        parser.add_argument("--reason", required=True, help="why (kept with the proof; never quote the data)")
        parser.add_argument(
            "--requested-by", metavar="USERNAME", help="the lead or admin who asked (recorded as asking)"
        )
        parser.add_argument(
            "--confirmed-by", metavar="USERNAME", help="refused: the second person confirms in the app"
        )

    def handle(self, *args, tenant, user_id, reason, requested_by=None, confirmed_by=None, **options):
        if confirmed_by:
            raise CommandError(
                "--confirmed-by is not taken: a second lead or admin confirms in the app, signed in "
                "(the erasures page), so no record names a confirmer who did not act"
            )
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        asked = self._lead(found, requested_by) if requested_by else None
        with tenant_context(found.pk):
            try:
                if found.two_person_rule:
                    request = dual_control.request_erasure(
                        tenant=found, user_id=user_id, reason=reason, by=asked
                    )
                    other = f" other than {asked.username}" if asked else ""
                    self.stdout.write(
                        f"{found.slug} keeps the two-person rule: erasure of {user_id} asked (request "
                        f"{request.pk}); a lead or admin{other} confirms it at /t/{found.slug}/erasures/ "
                        f"by {request.expires_at:%Y-%m-%d %H:%M} UTC"
                    )
                    return
                erasure = erase_subject(
                    tenant=found, user_id=user_id, reason=reason,
                    requested_by=str(Actor.user(asked)) if asked else "system:erase_subject",
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
