"""What agents remember, the evidence it came from, and how memories relate (DESIGN §2).

Oracle rules (DESIGN §8): `content` and `text` are NCLOBs there, so nothing filters, orders or
groups on them; `content_hash` is what code compares. Empty strings are NULL on Oracle, so
scope columns use NULL (never '') for "broader".
"""

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memory_review.tenancy.models import SealedTenantOwned, SealedTenantQuerySet, TenantOwned, tenant_key


def content_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


class Scope(models.Model):
    """Who a row is about. NULL means broader: a memory with no thread applies to every thread."""

    user_id = models.CharField(max_length=128, null=True, blank=True)
    agent_id = models.CharField(max_length=128, null=True, blank=True)
    thread_id = models.CharField(max_length=128, null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def scope_label(self) -> str:
        parts = [
            f"{name}={value}"
            for name, value in (
                ("user", self.user_id),
                ("agent", self.agent_id),
                ("thread", self.thread_id),
            )
            if value
        ]
        return ", ".join(parts) or "tenant-wide"


class SourceEvent(SealedTenantOwned, Scope):
    """Append-only evidence: a message, tool result, document or policy change, verbatim."""

    seal_kind = "event"
    seal_fields = (
        "source", "text", "text_hash", "user_id", "agent_id", "thread_id", "run_id", "occurred_at",
        "erased_at", "created_at",
    )  # fmt: skip

    class Source(models.TextChoices):
        CHAT = "chat", "Chat message"
        EMAIL = "email", "Email"
        SLACK = "slack", "Slack"
        TOOL = "tool", "Tool result"
        DOCUMENT = "document", "Document"
        POLICY = "policy", "Policy change"
        CRM = "crm", "CRM record"
        TICKET = "ticket", "Support ticket"
        AGENT = "agent", "Agent note"

    tenant = tenant_key()
    run_id = models.CharField(max_length=128, null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    text = models.TextField()
    text_hash = models.CharField(max_length=64)
    occurred_at = models.DateTimeField(default=timezone.now)
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "occurred_at"], name="event_tenant_time_ix")]

    def __str__(self) -> str:
        return f"event {self.pk} ({self.source})"


# `flagged_for` of a memory held before it was trusted (memories/holds.py): agents get no words
# of it until a person decides.
HELD = "held"


class MemoryStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    NEEDS_REVIEW = "needs_review", "Needs review"
    FROZEN = "frozen", "Frozen"
    CONTRADICTED = "contradicted", "Contradicted"
    SUPERSEDED = "superseded", "Superseded"
    EXPIRED = "expired", "Expired"
    DELETED = "deleted", "Deleted"


# Statuses in which a memory is still in force and gets judged against new evidence.
LIVE_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.NEEDS_REVIEW, MemoryStatus.FROZEN)
# Past its hard TTL, code expires a memory in these (a vote must never confirm it back); a
# frozen one stays pinned until a person unfreezes it. The sweep and the code checks share it.
EXPIRABLE = (MemoryStatus.ACTIVE, MemoryStatus.NEEDS_REVIEW)


def exact_scope(row: Scope) -> Q:
    """Rows in exactly `row`'s scope, a NULL column matching only NULL (no inheritance)."""
    query = Q()
    for column in ("user_id", "agent_id", "thread_id"):
        value = getattr(row, column)
        query &= Q(**{f"{column}__isnull": True}) if value is None else Q(**{column: value})
    return query


class MemoryQuerySet(SealedTenantQuerySet):
    def live(self) -> "MemoryQuerySet":
        return self.filter(status__in=LIVE_STATUSES)

    def needs_review(self) -> "MemoryQuerySet":
        return self.filter(status=MemoryStatus.NEEDS_REVIEW)

    def holding_subject(self, memory: "Memory") -> "MemoryQuerySet":
        """Other live memories with the same subject in exactly the same scope (NULLs equal).

        The database enforces this too (memory_live_subject_uq), but SQLite cannot compare
        NULL scopes as equal, so code checks first and names the problem.
        """
        return (
            self.filter(tenant_id=memory.tenant_id, subject=memory.subject, deleted_at__isnull=True)
            .filter(exact_scope(memory))
            .live()
            .exclude(pk=memory.pk)
        )

    def for_scope(
        self, *, user_id: str | None, agent_id: str | None, thread_id: str | None
    ) -> "MemoryQuerySet":
        """Memories that apply in this scope: each column matches, or is NULL (broader)."""
        query = Q()
        for column, value in (("user_id", user_id), ("agent_id", agent_id), ("thread_id", thread_id)):
            broader = Q(**{f"{column}__isnull": True})
            query &= (broader | Q(**{column: value})) if value is not None else broader
        return self.filter(query)


class Memory(SealedTenantOwned, Scope):
    # Its words, scope and validity; status and row version are the transitions' to prove, and
    # p_true, threshold_gap, flagged_* and last_checked_at are the queue's caches of its votes.
    seal_kind = "memory"
    seal_fields = (
        "kind", "subject", "content", "content_hash", "confidence", "written_by", "source_event_id",
        "channel", "version", "superseded_by_id", "valid_from", "valid_until", "deleted_at", "user_id",
        "agent_id", "thread_id", "created_at",
    )  # fmt: skip

    class Kind(models.TextChoices):
        FACT = "fact", "Fact"
        PREFERENCE = "preference", "Preference"
        DECISION = "decision", "Decision"
        EXCEPTION = "exception", "One-time exception"
        CONFIG = "config", "Configuration"
        POLICY = "policy", "Policy"
        OWNERSHIP = "ownership", "Ownership"

    tenant = tenant_key()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    subject = models.CharField(
        max_length=200, help_text="What the memory is about; one live memory per subject and scope."
    )
    content = models.TextField(help_text="Verbatim; never rewritten by a model.")
    content_hash = models.CharField(max_length=64)
    confidence = models.FloatField(default=1.0)
    written_by = models.CharField(max_length=120)
    # Its own index stays though memory_event_ix leads with it (tests/test_indexes.py, KEPT).
    source_event = models.ForeignKey(SourceEvent, on_delete=models.PROTECT, related_name="memories")
    channel = models.CharField(
        max_length=16,
        choices=SourceEvent.Source.choices,
        null=True,
        blank=True,
        help_text="Its source event's channel, copied when written (events never change), so lists "
        "filter on it without a join.",
    )
    trust = models.CharField(
        max_length=10,
        null=True,
        blank=True,
        help_text="Where its words came from (memories/trust.py): person, document, inferred, tool or "
        "import; a successor takes the least trusted of what it derives from.",
    )
    version = models.PositiveIntegerField(default=1)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="supersedes_rows"
    )
    valid_from = models.DateTimeField(default=timezone.now)
    valid_until = models.DateTimeField(null=True, blank=True, help_text="Hard TTL.")
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Written only by memory_review.lifecycle.transition(), with the two flag columns below.
    status = models.CharField(max_length=16, choices=MemoryStatus.choices, default=MemoryStatus.ACTIVE)
    flagged_at = models.DateTimeField(null=True, blank=True, help_text="When it last entered needs_review.")
    flagged_for = models.CharField(
        max_length=16,
        null=True,
        blank=True,
        help_text="What sent it to review: the verdict's disposition, or `user` / `system`.",
    )
    p_true = models.FloatField(null=True, blank=True, help_text="Latest bearing still_true vote.")
    threshold_gap = models.FloatField(
        default=1.0,
        help_text="How far p_true lies from the nearer edge of the policy's review band (1 when "
        "there is no vote): the review queue puts the smallest, the closest calls, first.",
    )
    last_checked_at = models.DateTimeField(null=True, blank=True)
    row_version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MemoryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "memories"
        # Each list's order has an index that ends in it, so a page is an index range scan at any
        # depth (keyset paging, memory_review/review/paging.py); (tenant, status) counts use them too.
        indexes = [
            models.Index(
                fields=["tenant", "status", "threshold_gap", "flagged_at", "id"], name="memory_queue_risk_ix"
            ),
            models.Index(fields=["tenant", "status", "flagged_at", "id"], name="memory_queue_age_ix"),
            # Filtered counts read this index alone, never the rows.
            models.Index(
                fields=["tenant", "status", "kind", "channel", "flagged_for"], name="memory_queue_filter_ix"
            ),
            models.Index(fields=["tenant", "status", "updated_at", "id"], name="memory_status_recent_ix"),
            models.Index(fields=["tenant", "updated_at", "id"], name="memory_recent_ix"),
            models.Index(fields=["tenant", "user_id", "agent_id", "thread_id"], name="memory_scope_ix"),
            # The hard-TTL sweep: live memories whose valid_until has passed.
            models.Index(fields=["tenant", "status", "valid_until"], name="memory_ttl_ix"),
            # What else an event wrote, oldest first (lineage's "from the same event"). Not by id:
            # the primary key serves that order too, and PostgreSQL walked it for the second
            # tenant past every row of the first (200,163 rows, 40-130 ms; 0.2 ms on this index).
            models.Index(fields=["source_event", "created_at", "id"], name="memory_event_ix"),
            # What is in force, a page in id order (agents/inforce.py): the tenant's own rows in
            # that order. The primary key alone walked the second tenant's page past every row of
            # the first (201,638 rows, 115 ms at 200,000 a tenant).
            models.Index(fields=["tenant", "id"], name="memory_tenant_id_ix"),
        ]
        constraints = [
            # Oracle: sql/oracle/030_indexes.sql holds the function-based index that stands in
            # for this partial index (Django drops conditional unique constraints there).
            models.UniqueConstraint(
                fields=["tenant", "user_id", "agent_id", "thread_id", "subject"],
                condition=Q(status__in=LIVE_STATUSES, deleted_at__isnull=True),
                nulls_distinct=False,
                name="memory_live_subject_uq",
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="memory_confidence_ck"
            ),
        ]

    def __str__(self) -> str:
        return f"memory {self.pk}: {self.subject}"

    def is_expired(self, now=None) -> bool:
        return self.valid_until is not None and self.valid_until <= (now or timezone.now())


class MemoryTally(TenantOwned):
    """How many of a tenant's memories are in each status, kept by the writers that change it
    (memory_write adds, lifecycle.transition() moves), so the tenant's home page reads seven rows
    rather than counting every memory. `tallies.recount()` rebuilds it after a bulk load.

    A status's count is kept in STRIPES rows, each writer adding to one at random (issue 30): one
    row a status would serialise every write of a tenant until it commits, as the chain head did."""

    STRIPES = 16

    # Not `status`: this row counts memories in a status, it has none (and only the lifecycle
    # writes a status).
    tenant = tenant_key()
    of_status = models.CharField(max_length=16, choices=MemoryStatus.choices)
    stripe = models.PositiveSmallIntegerField(default=0)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "of_status", "stripe"], name="memtally_tenant_status_stripe_uq"
            )
        ]

    def __str__(self) -> str:
        return f"{self.n} {self.of_status} in tenant {self.tenant_id}"


class MemoryLink(SealedTenantOwned):
    """A directed typed edge between memories. Read backwards: is_superseded_by, is_refined_by..."""

    seal_kind = "link"
    seal_fields = ("src_id", "dst_id", "kind", "origin", "created_at")

    class Kind(models.TextChoices):
        SUPERSEDES = "supersedes", "supersedes"
        REFINES = "refines", "refines"
        SUPPORTS = "supports", "supports"
        DUPLICATES = "duplicates", "duplicates"
        CONTRADICTS = "contradicts", "contradicts"

    class Origin(models.TextChoices):
        EXPLICIT = "explicit", "Written by the agent"
        ASSESSMENT = "assessment", "Found by an assessment"
        REVIEWER = "reviewer", "Added by a reviewer"

    INVERSE_NAMES = {
        Kind.SUPERSEDES: "is superseded by",
        Kind.REFINES: "is refined by",
        Kind.SUPPORTS: "is supported by",
        Kind.DUPLICATES: "is duplicated by",
        Kind.CONTRADICTS: "is contradicted by",
    }

    src = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="links_out", db_index=False)
    dst = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="links_in")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["src", "dst", "kind"], name="memlink_src_dst_kind_uq"),
            models.CheckConstraint(condition=~Q(src=models.F("dst")), name="memlink_no_self_ck"),
        ]

    def __str__(self) -> str:
        return f"{self.src_id} {self.kind} {self.dst_id}"


class Erasure(SealedTenantOwned):
    """A right-to-forget request and its proof: what was erased, how much, and a hash of it."""

    seal_kind = "erasure"
    seal_fields = (
        "user_id", "requested_by", "reason", "confirmed_by", "memories_erased", "events_erased",
        "candidates_erased", "labels_cleared", "proof_hash", "completed_at", "created_at",
    )  # fmt: skip

    user_id = models.CharField(max_length=128)
    requested_by = models.CharField(max_length=120)
    reason = models.CharField(max_length=500)
    confirmed_by = models.CharField(
        max_length=120, null=True, blank=True, help_text="The second person, where the two-person rule holds."
    )
    memories_erased = models.PositiveIntegerField(default=0)
    events_erased = models.PositiveIntegerField(default=0)
    candidates_erased = models.PositiveIntegerField(default=0)
    labels_cleared = models.PositiveIntegerField(default=0)
    proof_hash = models.CharField(
        max_length=64,
        null=True,
        blank=True,
        help_text="SHA-256 over the erased rows' ids and prior content hashes.",
    )
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"erasure {self.pk} for user {self.user_id}"


class TrustRules(SealedTenantOwned):
    """Which trust classes (memories/trust.py) a tenant holds for a person before any agent reads
    them as in force, as its lead set them (memories/holds.py). One row a tenant; none: hold no
    class for its provenance alone (what a memory says is held all the same). Sealed: a rule
    quietly dropped around the application is named by verify_audit."""

    seal_kind = "trust_rules"
    seal_fields = ("hold_classes", "changed_by", "changed_at")

    hold_classes = models.CharField(max_length=80, blank=True, help_text="Comma-separated trust classes.")
    changed_by = models.CharField(max_length=120)
    changed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="trustrules_one_ux")]

    def __str__(self) -> str:
        return f"trust rules of tenant {self.tenant_id}: hold {self.hold_classes or 'none'}"

    @property
    def held(self) -> list[str]:
        return [name for name in self.hold_classes.split(",") if name]


class DualControl(SealedTenantOwned):
    """A request that needs a second lead or admin where the tenant keeps the two-person rule:
    erasing a person's data, forgetting a memory, changing the tenant's security settings or its
    members (compliance/security.py). It lapses after a day; asking, confirming and cancelling
    are all kept, with who and when. A settings or membership change made where the tenant did not
    keep the rule is kept too, as `applied` at once by the one person who made it."""

    seal_kind = "dual_control"
    seal_fields = (
        "kind", "user_id", "memory_id", "seen_version", "reason", "requested_by_id", "requested_at",
        "expires_at", "decided_by_id", "decided_at", "outcome", "erasure_id", "change",
    )  # fmt: skip

    class Kind(models.TextChoices):
        ERASE = "erase", "Erase a person's data"
        FORGET = "forget", "Forget a memory"
        SETTINGS = "settings", "Change the tenant's security settings"
        MEMBERSHIP = "membership", "Change a member's role"
        APPROVE = "approve", "Approve a memory held before it was trusted"

    LIFETIME = timedelta(hours=24)  # a request lapses, unconfirmed, after a day

    kind = models.CharField(max_length=16, choices=Kind.choices)
    user_id = models.CharField(max_length=128, null=True, blank=True, help_text="Whose data, for an erasure.")
    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    seen_version = models.PositiveIntegerField(null=True, blank=True, help_text="The memory's, when asked.")
    reason = models.CharField(max_length=1000)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who asked; null: the command line (the host's operator).",
    )
    requested_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(
        max_length=16, null=True, blank=True, help_text="confirmed, cancelled, or applied (no rule held)"
    )
    erasure = models.ForeignKey(Erasure, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    change = models.JSONField(
        null=True,
        blank=True,
        help_text='A settings change {"two_person_rule": [before, after]} or a membership change '
        '{"user": id, "role": [before, after]} (null: not a member).',
    )

    def __str__(self) -> str:
        return f"{self.kind} request {self.pk}"


class MemoryChange(SealedTenantOwned):
    """One row per change to what is in force for agents (issue 16): a memory created or
    rewritten, moved between statuses, expired, forgotten or erased. It is the agents' change
    feed and the webhooks' outbox at once, written in the transaction that made the change.

    `seq` counts a tenant's changes from 1 in commit order: a change is written without one, and
    the tenant's sequencer (audit/sequencer.py), one at a time, gives committed changes the next
    positions, so a change committed later always has a higher `seq` and a reader that has seen
    `seq` N has seen every change before it. Readers ask only for changes with a position.
    The reason, the actor and the content are not copied: the feed reads them
    from the transition and the memory, so an erasure that blanks those leaves no copy here.

    Sealed (issue 27, item 3): this is how an agent learns to forget, so a change deleted (the
    `erased` one), forged (a `forgotten` that never happened) or moved to another position
    around the application is named by verify_audit."""

    seal_kind = "change"
    seal_fields = ("seq", "memory_id", "kind", "transition_id", "created_at")

    class Kind(models.TextChoices):
        CREATED = "created", "created"
        REWRITTEN = "rewritten", "rewritten"
        MOVED = "moved", "moved"
        EXPIRED = "expired", "expired"
        FORGOTTEN = "forgotten", "forgotten"
        ERASED = "erased", "erased"

    tenant = tenant_key()
    seq = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Position in the tenant's feed, from 1, in commit order: NULL until given.",
    )
    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="changes")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    transition = models.ForeignKey(
        "audit.Transition",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The move, for every kind but created and rewritten.",
    )
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="memchange_tenant_seq_uq")]

    def __str__(self) -> str:
        return f"change {self.seq} in tenant {self.tenant_id}: memory {self.memory_id} {self.kind}"
