from datetime import UTC, timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory_review.integrity.db_context import tenant_context
from memory_review.quality import sampling
from memory_review.quality.models import Population
from memory_review.tenancy.models import Tenant


class Command(BaseCommand):
    help = (
        "Draw a sampled audit (issue 31): a stratified random sample of the memories in force that no "
        "person reviewed, or of the policy's automatic decisions over the last --days, each stratum "
        "(agent, channel, kind, decision) as large as --precision needs, within --most labels; sealed "
        "with its seed. Prints each stratum's size and share."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--population", required=True, choices=Population.values)
        parser.add_argument("--precision", type=float, default=0.03, help="half-width in each stratum (0.03)")
        parser.add_argument("--confidence", type=float, default=0.95)
        parser.add_argument("--most", type=int, default=2000, help="labels to spend at most (2000)")
        parser.add_argument("--days", type=float, default=1.0, help="decisions: the period, back from now")
        parser.add_argument("--seed", help="draw again what this seed drew (64 hex digits), with its --end")
        parser.add_argument("--end", help="when the period ends (ISO 8601, UTC if no offset); default now")

    def handle(
        self, *args, tenant, population, precision, confidence, most, days, seed=None, end=None, **options
    ):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        if end is not None:
            given = end
            end = parse_datetime(given)
            if end is None:
                raise CommandError(f"--end must be a time such as 2026-12-05T09:00:00+00:00, got {given!r}")
            end = end if timezone.is_aware(end) else timezone.make_aware(end, UTC)
        end = end or timezone.now()
        start = end - timedelta(days=days) if population == Population.DECISIONS else None
        with tenant_context(found.pk):
            try:
                sample = sampling.draw(
                    tenant=found, population=population, by="system:draw_audit_sample", precision=precision,
                    confidence=confidence, most=most, start=start, end=end, seed=seed,
                )  # fmt: skip
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"audit sample {sample.pk} of {found.slug}'s {Population(population).label}: "
            f"{sample.items} items from {len(sample.strata)} strata (+-{precision:.0%} in every stratum "
            f"would take {sample.labels_asked}); seed {sample.seed}"
        )
        for place, stratum in enumerate(sample.strata):
            key = " / ".join(
                str(value) if value is not None else "no agent" for value in stratum["key"].values()
            )
            self.stdout.write(f"  {place:>3}  {stratum['sampled']:>5} of {stratum['population']:>9,}  {key}")
