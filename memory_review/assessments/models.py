"""Jev's votes and what the policy made of them (DESIGN §2, §4)."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory_review.memories.models import Memory, Scope, SourceEvent
from memory_review.tenancy.models import (
    SealedTenantOwned,
    SealedTenantQuerySet,
    TenantOwned,
    tenant_key,
)


class PolicyQuerySet(SealedTenantQuerySet):
    def active(self) -> "PolicyVersion":
        """The active version; a tenant without one cannot be assessed."""
        policy = self.filter(mode=PolicyVersion.Mode.ACTIVE).first()
        if policy is None:
            raise NoActivePolicy("this tenant has no active policy version")
        return policy

    def shadow(self) -> "PolicyVersion | None":
        return self.filter(mode=PolicyVersion.Mode.SHADOW).first()


class NoActivePolicy(Exception):
    pass


class PolicyVersion(SealedTenantOwned):
    """Thresholds as data. Per tenant one `active` and at most one `shadow`."""

    seal_kind = "policy"
    seal_fields = ("number", "mode", "thresholds", "note", "created_by", "created_at")

    class Mode(models.TextChoices):
        ACTIVE = "active", "Active"
        SHADOW = "shadow", "Shadow"
        RETIRED = "retired", "Retired"

    tenant = tenant_key()
    number = models.PositiveIntegerField()
    mode = models.CharField(max_length=8, choices=Mode.choices)
    thresholds = models.JSONField()
    note = models.CharField(max_length=500, null=True, blank=True)
    created_by = models.CharField(max_length=120)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PolicyQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "number"], name="policy_tenant_number_uq"),
            # Oracle: function-based index in sql/oracle/030_indexes.sql.
            models.UniqueConstraint(
                fields=["tenant", "mode"],
                condition=Q(mode__in=["active", "shadow"]),
                name="policy_one_per_mode_uq",
            ),
        ]

    def __str__(self) -> str:
        return f"policy v{self.number} ({self.mode})"

    @property
    def label(self) -> str:
        return f"v{self.number}"


class Assessment(SealedTenantOwned):
    """One Jev job: one or more HTTP requests about one event or one candidate."""

    # What its votes rest on: the question set, the policy and the model that answered. Its
    # lease, counts and costs are the job's bookkeeping, not sealed.
    seal_kind = "assessment"
    seal_fields = (
        "purpose", "event_id", "model_name", "question_set_version", "policy_id", "offline_standin",
        "remember_successor", "reason", "targets", "created_at",
    )  # fmt: skip

    class Purpose(models.TextChoices):
        INVALIDATION = "invalidation", "Invalidation"
        PROMOTION = "promotion", "Promotion"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    # Indexed (tenant, id) below: the list pages newest first within the tenant (by the primary
    # key, PostgreSQL read past every assessment of the tenants written after it).
    tenant = tenant_key()
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    event = models.ForeignKey(
        SourceEvent, on_delete=models.PROTECT, null=True, blank=True, related_name="assessments"
    )
    model_name = models.CharField(max_length=64, null=True, blank=True, help_text="As the API answered.")
    question_set_version = models.CharField(max_length=64)
    policy = models.ForeignKey(PolicyVersion, on_delete=models.PROTECT, related_name="assessments")
    requests = models.PositiveIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=8, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    error = models.TextField(null=True, blank=True)
    offline_standin = models.BooleanField(default=False)
    remember_successor = models.BooleanField(
        default=False, help_text="Store the event verbatim as the successor of what it supersedes."
    )
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="A worker holds it until then; after, another may take it."
    )
    judged_at = models.DateTimeField(null=True, blank=True, help_text="When its votes were recorded.")
    candidates_total = models.PositiveIntegerField(default=0, help_text="Memories in the event's scope.")
    reason = models.CharField(
        max_length=1000,
        null=True,
        blank=True,
        help_text="Why it ran, when not simply for a new event: a reassessment after a change.",
    )
    targets = models.JSONField(
        null=True,
        blank=True,
        help_text="The memory ids a reassessment judges, in place of the event's scope.",
    )
    candidates_screened_out = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # One invalidation per event, so observing it twice never judges it twice.
            # Oracle: function-based index in sql/oracle/030_indexes.sql.
            models.UniqueConstraint(
                fields=["event", "purpose"],
                condition=Q(purpose="invalidation"),
                name="assessment_one_per_event_uq",
            ),
        ]
        # The lease reaper's look every few seconds: running ones whose lease has lapsed.
        indexes = [
            models.Index(fields=["tenant", "id"], name="assessment_tenant_ix"),
            models.Index(fields=["tenant", "state", "lease_until"], name="assessment_lease_ix"),
            # The labeling stream leaves out replayed copies of votes: the few such assessments are
            # found here, not by reading every assessment of the tenant (58 ms at 2,000,000).
            models.Index(fields=["tenant", "model_name"], name="assessment_model_ix"),
        ]

    SEEDED_MODEL = "seed_demo"  # what seed_demo writes: hand-written votes, not a model's
    # A policy's new decisions on votes already stored (reassessment.redecide): copies of votes,
    # never labeled or replayed again as votes of their own.
    REPLAYED_MODEL = "replay of stored votes"

    def __str__(self) -> str:
        return f"assessment {self.pk} ({self.purpose}, {self.state})"

    @property
    def votes_from(self) -> str:
        """Who voted, said plainly on every screen that shows votes."""
        if self.model_name == self.SEEDED_MODEL:
            return "hand-written demo votes"
        if self.offline_standin:
            return "offline stand-in (a test double)"
        return self.model_name or "–"


class AssessmentRestart(TenantOwned):
    """Each time an assessment was handed to a worker again: by the lease reaper after its
    worker died, or by a lead retrying one that failed. Kept: who did it, when, and what had
    happened before (the error a retry clears from the assessment lives on here)."""

    assessment = models.ForeignKey(
        Assessment, on_delete=models.PROTECT, related_name="restarts", db_index=False
    )
    actor = models.CharField(max_length=120, help_text="user:<id> or system:<job>")
    reason = models.CharField(max_length=1000)
    previous_state = models.CharField(max_length=8)
    previous_error = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["assessment", "created_at"], name="restart_assessment_ix")]

    def __str__(self) -> str:
        return f"assessment {self.assessment_id} restarted by {self.actor}"


class Disposition(models.TextChoices):
    UNRELATED = "unrelated", "Unrelated"
    DIRECTIVE = "directive", "Directive (logged, never written)"
    HYPOTHETICAL = "hypothetical", "Hypothetical (logged, never written)"
    CONFIRMED = "confirmed", "Confirmed"
    PARTIAL = "partial", "Partially changed"
    SUPERSEDED = "superseded", "Superseded"
    CONTRADICTED = "contradicted", "Contradicted"
    UNCERTAIN = "uncertain", "Uncertain"
    EXPIRED = "expired", "Expired by TTL (code)"
    NO_SOURCE = "no_source", "No source (code)"


class Verdict(SealedTenantOwned):
    """One memory judged against one event: six votes, the disposition, what it proposed."""

    seal_kind = "verdict"
    seal_fields = (
        "assessment_id", "memory_id", "event_id", "bears", "still_true", "replaces", "partial",
        "hypothetical", "directive", "disposition", "row_version", "proposed_status", "applied",
        "shadow_policy_id", "shadow_disposition", "created_at",
    )  # fmt: skip
    seal_grouped = True  # an event's hundred votes, one ledger row

    # Its index is (tenant, id) below: the tenant's newest vote is its first entry read backwards
    # (by the primary key, PostgreSQL read past every vote of the tenants written after it).
    # Its keys are the application's to keep, not the database's (db_constraint=False, issue 30):
    # an event writes a hundred votes, and PostgreSQL checked each one's keys at commit with a
    # locked read of each row named (FOR KEY SHARE), four or five hundred an event, a hundred of
    # them on memories other events lock too, and the tenant's row and its shadow policy's, which
    # every writer of the tenant shares (a MultiXact each time). Under load that commit cost the
    # database about 6.7 ms of CPU an event (BENCHMARKS.md). Nothing is lost: a vote is written
    # only for rows the event just read, none of the rows named is ever deleted by the application
    # (PROTECT, and erasure keeps the row), and a row deleted around it is named by verify_audit by
    # its seal, as the threat model already has it for an administrator with foreign keys off
    # (docs/audit.md).
    tenant = tenant_key(db_constraint=False)
    assessment = models.ForeignKey(
        Assessment, on_delete=models.PROTECT, related_name="verdicts", db_index=False, db_constraint=False
    )
    memory = models.ForeignKey(
        Memory, on_delete=models.PROTECT, related_name="verdicts", db_index=False, db_constraint=False
    )
    event = models.ForeignKey(
        SourceEvent, on_delete=models.PROTECT, related_name="verdicts", db_index=False, db_constraint=False
    )
    bears = models.FloatField(null=True, blank=True)
    still_true = models.FloatField(null=True, blank=True)
    replaces = models.FloatField(null=True, blank=True)
    partial = models.FloatField(null=True, blank=True)
    hypothetical = models.FloatField(null=True, blank=True)
    directive = models.FloatField(null=True, blank=True)
    disposition = models.CharField(max_length=16, choices=Disposition.choices)
    row_version = models.PositiveIntegerField(help_text="The memory's row version when it was judged.")
    proposed_status = models.CharField(max_length=16, null=True, blank=True)
    applied = models.BooleanField(default=False)
    shadow_policy = models.ForeignKey(
        PolicyVersion, on_delete=models.PROTECT, null=True, blank=True, related_name="+", db_constraint=False
    )
    shadow_disposition = models.CharField(max_length=16, choices=Disposition.choices, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event", "memory"], name="verdict_event_memory_uq"),
        ]
        # The labeling stream ranges over still_true: near the policy's edges, and bin by bin.
        indexes = [
            models.Index(fields=["tenant", "id"], name="verdict_tenant_ix"),
            models.Index(fields=["tenant", "still_true"], name="verdict_tenant_still_ix"),
            # A memory's votes newest first, a page at a time (without it PostgreSQL walks the
            # primary key backwards and discards every other memory's votes on the way).
            models.Index(fields=["memory", "-id"], name="verdict_memory_ix"),
            # An assessment's verdicts in id order, a keyset page at a time (its API).
            models.Index(fields=["assessment", "id"], name="verdict_assessment_ix"),
            # Its page: the strongest bearing vote first, a keyset page at a time.
            models.Index(fields=["assessment", "-bears", "-id"], name="verdict_bears_ix"),
        ]

    def __str__(self) -> str:
        return f"verdict {self.pk}: memory {self.memory_id} {self.disposition}"

    VOTE_NAMES = ("bears", "still_true", "replaces", "partial", "hypothetical", "directive")

    @property
    def votes(self) -> dict[str, float | None]:
        return {name: getattr(self, name) for name in self.VOTE_NAMES}


class CandidateStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    NEEDS_REVIEW = "needs_review", "Needs review"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class PromotionCandidate(SealedTenantOwned, Scope):
    """A proposed memory waiting to become durable (shadow mode: a reviewer decides)."""

    seal_kind = "candidate"
    seal_fields = (
        "kind", "subject", "claim", "claim_hash", "source_event_id", "source_hash", "proposed_by",
        "check_failed", "supported", "scope_fits", "conflict", "assessment_id", "policy_decision",
        "reviewer_decision", "reviewed_by", "disagreement", "memory_id", "user_id", "agent_id",
        "thread_id", "created_at",
    )  # fmt: skip

    class Decision(models.TextChoices):
        PROMOTE = "promote", "Promote"
        REVIEW = "review", "Review"
        REJECT = "reject", "Reject"

    # Indexed (tenant, id) below: the list pages newest first within the tenant.
    tenant = tenant_key()
    kind = models.CharField(max_length=16, choices=Memory.Kind.choices)
    subject = models.CharField(max_length=200)
    claim = models.TextField()
    claim_hash = models.CharField(max_length=64)
    source_event = models.ForeignKey(
        SourceEvent, on_delete=models.PROTECT, null=True, blank=True, related_name="candidates"
    )
    source_hash = models.CharField(
        max_length=64, null=True, blank=True, help_text="Source text hash when proposed."
    )
    proposed_by = models.CharField(max_length=120)
    check_failed = models.CharField(
        max_length=32, null=True, blank=True, help_text="Code check that rejected it."
    )
    supported = models.FloatField(null=True, blank=True)
    scope_fits = models.FloatField(null=True, blank=True)
    conflict = models.FloatField(null=True, blank=True)
    assessment = models.ForeignKey(
        Assessment, on_delete=models.PROTECT, null=True, blank=True, related_name="candidates"
    )
    policy_decision = models.CharField(max_length=8, choices=Decision.choices, null=True, blank=True)
    reviewer_decision = models.CharField(max_length=8, choices=Decision.choices, null=True, blank=True)
    reviewed_by = models.CharField(max_length=120, null=True, blank=True)
    disagreement = models.BooleanField(
        null=True, blank=True, help_text="The reviewer decided otherwise than the policy would have."
    )
    memory = models.OneToOneField(
        Memory, on_delete=models.PROTECT, null=True, blank=True, related_name="candidate"
    )
    # Written only by memory_review.lifecycle.transition().
    status = models.CharField(
        max_length=16, choices=CandidateStatus.choices, default=CandidateStatus.PROPOSED
    )
    row_version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The figures' mark: the tenant's latest decided candidate, read backwards from here.
        indexes = [
            models.Index(fields=["tenant", "id"], name="candidate_tenant_ix"),
            models.Index(fields=["tenant", "updated_at"], name="candidate_updated_ix"),
        ]

    def __str__(self) -> str:
        return f"candidate {self.pk}: {self.subject}"


class ScreeningOwed(TenantOwned):
    """A memory written in force whose instruction vote is still to be asked (screening.py):
    written in the memory's own transaction when Jev did not answer inside the agent's request,
    or for an import's memories. A worker asks once the write commits, and marks the row screened
    when the vote is in (or nothing is left to ask); a sweep queues again the rows whose last try
    is long past, so a lost task or a long outage delays the vote, never drops it. Kept after it
    is screened: when each memory was owed and screened stays readable."""

    # Indexed below by what is still owed: the sweep's oldest tries, the page's oldest owed.
    tenant = tenant_key()
    memory = models.OneToOneField(Memory, on_delete=models.PROTECT, related_name="+")
    owed_since = models.DateTimeField(default=timezone.now)
    queued_at = models.DateTimeField(default=timezone.now, help_text="The newest try, or its queueing.")
    tries = models.PositiveIntegerField(default=0, help_text="Tries Jev did not answer.")
    last_error = models.CharField(max_length=500, null=True, blank=True)
    screened_at = models.DateTimeField(null=True, blank=True)
    vote = models.FloatField(null=True, blank=True, help_text="Jev's vote; empty: nothing was left to ask.")

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "screened_at", "queued_at"], name="screenowed_due_ix"),
            models.Index(fields=["tenant", "screened_at", "owed_since"], name="screenowed_since_ix"),
        ]

    def __str__(self) -> str:
        state = "screened" if self.screened_at else "owed its instruction vote"
        return f"memory {self.memory_id}: {state}"
