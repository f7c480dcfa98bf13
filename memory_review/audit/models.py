"""The tamper-evident audit trail (DESIGN §2, §3, docs/audit.md): one append-only row per status
change (`Transition`), one ledger row per write to any row a decision rests on (`Seal`), each a
keyed per-tenant chain whose heads `AuditChain` keeps."""

from django.db import models
from django.utils import timezone

from memory_review.tenancy.models import SealedTenantOwned, Tenant, TenantOwned, TenantQuerySet, tenant_key

# Moves newest first: a move still waiting for its position (AUDIT_SEQUENCER=deferred, for the
# moment until the sequencer links it) is the newest, before every linked one. PostgreSQL and
# Oracle put NULLs first in a descending order by default; SQLite puts them last. Among moves
# waiting together, the later written (the higher id) is the newer.
MOVES_NEWEST_FIRST = (models.F("seq").desc(nulls_first=True), models.F("pk").desc())


class Transition(TenantOwned):
    """Append-only (a trigger refuses UPDATE and DELETE); rows form a per-tenant hash chain."""

    tenant = tenant_key()
    seq = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Position in the tenant's chain, from 1: NULL until sequenced."
    )
    memory = models.ForeignKey(
        "memories.Memory",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="transitions",
        db_index=False,  # transition_memory_seq_ix leads with it
    )
    candidate = models.ForeignKey(
        "assessments.PromotionCandidate",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="transitions",
    )
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    action = models.CharField(max_length=16)
    actor = models.CharField(max_length=120, help_text="user:<id>, policy:<version> or system:<job>")
    reason = models.CharField(max_length=1000, help_text="Erasable: the hash covers reason_mac.")
    reason_mac = models.CharField(max_length=64, help_text="HMAC-SHA256 of the reason under key_id.")
    verdict = models.ForeignKey(
        "assessments.Verdict", on_delete=models.PROTECT, null=True, blank=True, related_name="transitions"
    )
    row_version = models.PositiveIntegerField(help_text="The row version this transition produced.")
    request_id = models.CharField(max_length=64, null=True, blank=True)
    request_id_mac = models.CharField(max_length=64, null=True, blank=True)
    content_hash = models.CharField(
        max_length=64,
        null=True,
        blank=True,
        help_text="The memory's content hash (a candidate's claim hash) as the move left it.",
    )
    erased_by = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="The erasure that blanked this row's reason and request id."
    )
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64, null=True, blank=True)
    hash = models.CharField(
        max_length=64, null=True, blank=True, help_text="HMAC-SHA256 under key_id (docs/audit.md)."
    )
    key_id = models.CharField(
        max_length=32,
        null=True,
        blank=True,
        help_text="The audit key that signed it.",
    )
    leaf = models.CharField(
        max_length=64,
        null=True,
        blank=True,
        help_text="HMAC-SHA256 of the row without its position, written with it (NULL before 0017).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "seq"], name="transition_tenant_seq_uq"),
            models.CheckConstraint(
                condition=models.Q(memory__isnull=False, candidate__isnull=True)
                | models.Q(memory__isnull=True, candidate__isnull=False),
                name="transition_one_subject_ck",
            ),
        ]
        # Who did what lately: the review flow's and the team page's counts, the trail by actor.
        indexes = [
            models.Index(fields=["tenant", "actor", "created_at"], name="transition_actor_time_ix"),
            # The trail between two dates, newest first (audit_trail.TrailFilters.ordering).
            models.Index(fields=["tenant", "created_at", "seq"], name="transition_time_ix"),
            # The trail filtered by action, newest first: a rare action is a short index range.
            models.Index(fields=["tenant", "action", "-seq"], name="transition_action_seq_ix"),
            # One memory's moves a page at a time, either way (its history, its lineage, the trail
            # narrowed to it): the memory's own index sorted every move of a memory with
            # thousands to show twenty.
            models.Index(fields=["memory", "seq"], name="transition_memory_seq_ix"),
            # The trail by actor, newest first: (tenant, actor, created_at) gives no seq order,
            # and the tenant's seq was walked past everyone else's moves (13,981 after a busy day).
            models.Index(fields=["tenant", "actor", "-seq"], name="transition_actor_seq_ix"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.from_status} -> {self.to_status} by {self.actor}"


class Seal(TenantOwned):
    """Append-only: one row per write to a sealed row, or per write of many rows of a kind sealed in
    groups (integrity/seals.py), chained per tenant like the transitions. `digest` is HMAC-SHA256 of
    the row's sealed columns as the write left them, or of the group's `members`."""

    class Action(models.TextChoices):
        CREATE = "create", "created"
        CHANGE = "change", "changed"
        ERASE = "erase", "text erased"
        DELETE = "delete", "deleted"
        BASELINE = "baseline", "sealed at upgrade"

    # No index of its own: (tenant, seq) and (tenant, kind, object id, id) both lead with it, and
    # every sealed write pays for each index the ledger keeps.
    tenant = tenant_key()
    seq = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Position in the tenant's ledger, from 1: NULL until sequenced."
    )
    kind = models.CharField(max_length=24, help_text="What was written: memory, verdict, label, ...")
    object_id = models.PositiveBigIntegerField()
    action = models.CharField(max_length=8, choices=Action.choices)
    digest = models.CharField(max_length=64)
    trail_seq = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="How far the transitions' chain reached when it was sequenced."
    )
    actor = models.CharField(max_length=120, help_text="Who wrote: user:<id>, token:<prefix>, system:<job>.")
    erasure = models.PositiveBigIntegerField(null=True, blank=True, help_text="For `erase`: which erasure.")
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64, null=True, blank=True)
    key_id = models.CharField(max_length=32)
    hash = models.CharField(max_length=64, null=True, blank=True)
    leaf = models.CharField(
        max_length=64, null=True, blank=True, help_text="HMAC-SHA256 without the position (NULL before 0017)."
    )
    members = models.TextField(
        null=True,
        blank=True,
        help_text="A group's rows, [[id, digest], ...] by id; its digest is their HMAC (NULL for one row).",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="seal_tenant_seq_uq")]
        # Verification reads each kind's seals in object order, beside the rows they seal.
        # By id, not seq: an object's seals are written in turn (its row is locked by each write), so
        # its newest is its highest id, sequenced or not; and giving a seal its position then
        # updates one index, not two.
        indexes = [models.Index(fields=["tenant", "kind", "object_id", "id"], name="seal_object_id_ix")]

    def __str__(self) -> str:
        return f"seal #{self.seq}: {self.kind} {self.object_id} {self.action}"


class AuditChain(models.Model):
    """The heads of a tenant's two chains, transitions and seals. Only the sequencer writes it
    (audit/sequencer.py), holding it locked while it links a batch; the heads catch a removed tail."""

    tenant = models.OneToOneField(Tenant, on_delete=models.PROTECT, primary_key=True, related_name="+")
    seq = models.PositiveBigIntegerField(default=0)
    head_hash = models.CharField(max_length=64)
    seal_seq = models.PositiveBigIntegerField(default=0)
    seal_hash = models.CharField(max_length=64, default="0" * 64)

    objects = TenantQuerySet.as_manager()

    def __str__(self) -> str:
        return f"chain of {self.tenant_id} at #{self.seq}"


class AuditVerification(SealedTenantOwned):
    """When a tenant's trail was last checked and what was found: the auditor's workspace shows
    the latest. verify_audit, the checkpoint job and the workspace's "verify now" write one.
    Sealed, so what an earlier check saw (the checkpoint file's length) cannot be taken back."""

    seal_kind = "verification"
    seal_fields = (
        "verified_at", "intact", "problem", "seq", "seal_seq", "checkpoint_seq", "checkpoint_lines",
        "checkpoint_line_hash", "by",
    )  # fmt: skip

    tenant = tenant_key()
    verified_at = models.DateTimeField()
    intact = models.BooleanField()
    problem = models.CharField(max_length=1000, null=True, blank=True)
    seq = models.PositiveBigIntegerField(help_text="The chain's head when checked.")
    seal_seq = models.PositiveBigIntegerField(default=0, help_text="The seals' head when checked.")
    checkpoint_seq = models.PositiveBigIntegerField(null=True, blank=True)
    checkpoint_lines = models.PositiveIntegerField(
        default=0, help_text="Lines in the checkpoint file when checked: a shorter file later is caught."
    )
    checkpoint_line_hash = models.CharField(
        max_length=64, null=True, blank=True, help_text="SHA-256 of the newest checkpoint line then."
    )
    by = models.CharField(max_length=120)

    class Meta:
        indexes = [models.Index(fields=["tenant", "verified_at"], name="auditverify_tenant_time_ix")]

    def __str__(self) -> str:
        return f"{'intact' if self.intact else 'broken'} at {self.verified_at:%Y-%m-%d %H:%M}"


class RunState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class VerificationRun(TenantOwned):
    """A "Verify now" a person asked for, run by a Celery worker: which check it is on and how
    many rows it has read of how many, then the verification it recorded. One runs at a time a
    tenant (verification.py refuses a second). Not sealed: what it found is, in its result."""

    tenant = tenant_key()
    requested_by = models.CharField(max_length=120)
    requested_at = models.DateTimeField(default=timezone.now)
    state = models.CharField(max_length=10, choices=RunState.choices, default=RunState.QUEUED)
    stage = models.CharField(max_length=80, null=True, blank=True, help_text="The check it is on.")
    checked = models.PositiveBigIntegerField(default=0, help_text="Rows read so far.")
    total = models.PositiveBigIntegerField(default=0, help_text="Rows to read.")
    error = models.CharField(max_length=1000, null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    beat_at = models.DateTimeField(null=True, blank=True, help_text="The worker last said it was alive.")
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.ForeignKey(
        AuditVerification, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["tenant", "-requested_at"], name="verifyrun_tenant_ix")]

    def __str__(self) -> str:
        return f"verification run {self.pk} ({self.state})"

    @property
    def active(self) -> bool:
        return self.state in (RunState.QUEUED, RunState.RUNNING)

    @property
    def percent(self) -> int:
        return min(99, self.checked * 100 // self.total) if self.total else 0
