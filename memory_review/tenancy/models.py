"""The access boundary: tenants, who belongs to them, and in which role."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory_review.integrity.seals import Sealed, SealedQuerySet


class Tenant(Sealed):
    seal_kind = "tenant"
    seal_fields = ("slug", "name", "two_person_rule", "two_person_since", "is_active", "created_at")
    seal_tenant = "pk"

    slug = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=120)
    two_person_rule = models.BooleanField(
        default=False,
        help_text="Erasing a person's data or forgetting a memory needs a second lead or admin.",
    )
    two_person_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the two-person rule was last switched on or off (compliance/security.py).",
    )
    is_active = models.BooleanField(
        default=True,
        help_text="An inactive tenant's pages and API answer 404, and the database refuses its context.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SealedQuerySet.as_manager()

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    REVIEWER = "reviewer", "Reviewer"
    LEAD = "lead", "Support lead"
    AUDITOR = "auditor", "Compliance auditor"
    LABELER = "labeler", "Calibration labeler"
    ADMIN = "admin", "Admin"


def tenant_key(**options) -> models.ForeignKey:
    """The key to the tenant for a model whose own indexes lead with it: no index of its own,
    which would be one more write on every row for nothing those indexes do not serve
    (tests/test_indexes.py)."""
    options = {"on_delete": models.PROTECT, "related_name": "+", **options}
    return models.ForeignKey(Tenant, db_index=False, **options)


class Membership(Sealed):
    seal_kind = "membership"
    seal_fields = ("user_id", "role")

    tenant = tenant_key(on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)

    objects = SealedQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "user"], name="membership_tenant_user_uq")]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} as {self.role}"

    @property
    def can_review(self) -> bool:
        """Decides memories and candidates. Auditors and labelers read, never change."""
        return self.role in (Role.REVIEWER, Role.LEAD, Role.ADMIN)

    @property
    def can_audit(self) -> bool:
        """Reads the audit trail, verifies it and exports it."""
        return self.role in (Role.AUDITOR, Role.LEAD, Role.ADMIN)

    @property
    def can_label(self) -> bool:
        """Labels past votes for calibration; changes no memory."""
        return self.role in (Role.LABELER, Role.REVIEWER, Role.LEAD, Role.ADMIN)

    @property
    def can_adopt(self) -> bool:
        """Adopts a proposed policy version (a lead proposes it)."""
        return self.role == Role.ADMIN

    @property
    def can_lead(self) -> bool:
        """Also acts on others' claims and on whole filtered sets at once."""
        return self.role in (Role.LEAD, Role.ADMIN)


class TenantQuerySet(models.QuerySet):
    """Every tenant-owned query starts with `.for_tenant(tenant)`."""

    def for_tenant(self, tenant: Tenant) -> "TenantQuerySet":
        return self.filter(tenant=tenant)

    def tenant_range(self, tenant) -> "TenantQuerySet":
        """The tenant's rows, the tenant given as a range too: for a page in id order.

        Given `tenant_id = x` alone and ORDER BY id DESC LIMIT n, PostgreSQL may walk the primary
        key backwards, filtering, which with few tenants it estimates at the cost of the
        (tenant, id) index; when another tenant's rows are newer it reads all of them first (two
        tenants of 2,000,000 memories: 205,791 assessments before the list's first page, 241 ms;
        20,005,990 verdicts before the newest, 5.3 s). The range lowers its estimate of the rows
        that filter passes, and the (tenant, ...) index answers (0.2 ms). `tenant`: a Tenant, an
        id, or an expression (OuterRef("pk"))."""
        return self.as_range("tenant_id", getattr(tenant, "pk", tenant))

    def as_range(self, column: str, value) -> "TenantQuerySet":
        """The rows whose integer `column` is `value`, written as the range [value, value + 1):
        the same rows as `column = value`, but PostgreSQL keeps the column in an ORDER BY led by
        it (an equality makes it a constant, dropped from the order), so only the index that
        leads with it gives that order. tenant_range, and a parent's rows newest first (a
        webhook endpoint's deliveries, agents.webhooks.log)."""
        return self.filter(**{f"{column}__gte": value, f"{column}__lt": value + 1})

    def count_up_to(self, most: int) -> tuple[int, bool]:
        """How many rows, counted up to `most`, and whether there are more: a count a page shows
        beside a bounded list, which at one import's event of 200,000 memories would otherwise
        read all of them (750 ms)."""
        found = self[: most + 1].count()
        return min(found, most), found > most


class TenantOwned(models.Model):
    """Base for every row that belongs to a tenant (DESIGN §2: every row carries `tenant`)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")

    objects = TenantQuerySet.as_manager()

    class Meta:
        abstract = True


class SealedTenantQuerySet(SealedQuerySet, TenantQuerySet):
    pass


class SealedTenantOwned(Sealed, TenantOwned):
    """A tenant's row that a decision rests on: every write to it is sealed (integrity/seals.py)."""

    objects = SealedTenantQuerySet.as_manager()

    class Meta:
        abstract = True


class ApiToken(Sealed):
    """A tenant's key for the agents' API. Only a hash is stored; the token is shown once."""

    seal_kind = "api_token"
    seal_fields = ("name", "prefix", "token_hash", "created_at", "expires_at", "revoked_at", "revoked_by")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=12, unique=True, help_text="Public part, to find the row.")
    token_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="None: until revoked.")
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=120, null=True, blank=True)

    objects = SealedQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) for {self.tenant}"

    @property
    def state(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        return "active"
