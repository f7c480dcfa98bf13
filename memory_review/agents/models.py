"""What agents report back (which memories each response used) and where their changes are posted
(webhooks, their deliveries and each attempt): issue 16; and the tenant's notices that are not
memory changes, posted the same way (issue 31: memory health got worse)."""

from django.db import models
from django.db.models import Q

from memory_review.memories.models import Memory, MemoryChange
from memory_review.tenancy.models import SealedTenantOwned, TenantOwned, tenant_key


class Receipt(SealedTenantOwned):
    """One memory used in one agent response: its id and content version, the response's id, who
    it answered, in which thread, and when. Tenant data under RLS and VPD, sealed like every row a
    decision rests on (so a receipt removed or edited around the application is reported), and
    blanked by a right-to-forget erasure of the person it answered or of the memory."""

    seal_kind = "receipt"
    seal_fields = (
        "memory_id", "version", "response_id", "user_id", "agent_id", "thread_id", "used_at", "erased_at",
        "created_at",
    )  # fmt: skip

    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="receipts", db_index=False)
    version = models.PositiveIntegerField(help_text="The memory's content version the response used.")
    response_id = models.CharField(max_length=128, help_text="The agent's id for the response.")
    user_id = models.CharField(max_length=128, null=True, blank=True)
    agent_id = models.CharField(max_length=128, null=True, blank=True)
    thread_id = models.CharField(max_length=128, null=True, blank=True)
    used_at = models.DateTimeField(help_text="When the response was given.")
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["memory", "used_at"], name="receipt_memory_used_ix")]

    def __str__(self) -> str:
        return f"receipt {self.pk}: memory {self.memory_id} in response {self.response_id}"


class WebhookEndpoint(SealedTenantOwned):
    """Where a tenant's changes are posted (agents/webhooks.py): a URL, the kinds of change it
    wants (blank: every kind) and the secret its deliveries are signed with (Standard Webhooks).
    Sealed like every setting a decision's reach rests on: an endpoint added, pointed elsewhere or
    given another secret around the application is reported. Removed and disabled endpoints are
    kept, with who did it and when."""

    seal_kind = "webhook_endpoint"
    # The cursor too: moved past changes around the application, it would skip their deliveries.
    seal_fields = (
        "url", "kinds", "description", "secret", "created_by", "created_at", "cursor", "disabled_at",
        "disabled_by", "removed_at", "removed_by",
    )  # fmt: skip

    url = models.CharField(max_length=500)
    kinds = models.CharField(max_length=200, blank=True, help_text="Comma-separated; blank: every kind.")
    description = models.CharField(max_length=120, blank=True)
    # Kept as given to the tenant (signing needs it); shown once, never on a page or in the API.
    secret = models.CharField(max_length=80)
    created_by = models.CharField(max_length=120)
    created_at = models.DateTimeField(auto_now_add=True)
    # The feed position fanned out into deliveries so far (every change up to it has its row).
    cursor = models.BigIntegerField(default=0)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_by = models.CharField(max_length=120, null=True, blank=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    removed_at = models.DateTimeField(null=True, blank=True)
    removed_by = models.CharField(max_length=120, null=True, blank=True)
    # Failed attempts in a row, and since when (both cleared by a success).
    failure_streak = models.PositiveIntegerField(default=0)
    failing_since = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"webhook {self.pk}: {self.url}"

    @property
    def kind_list(self) -> list[str]:
        return [kind for kind in self.kinds.split(",") if kind]

    @property
    def state(self) -> str:
        if self.removed_at:
            return "removed"
        return "disabled" if self.disabled_at else "enabled"


class Notice(SealedTenantOwned):
    """A tenant-level event the agents hear of that is not a memory change (agents/webhooks.py
    `notify`): its kind (`health.regressed`), the key that makes it once (a second notice of the
    same kind and key is not written), and what it says. `data` holds population-level figures and
    the names of agents, channels and kinds, never a person's words. Sealed like the deliveries that
    carry it: a notice forged or edited around the application is named by verification."""

    seal_kind = "notice"
    seal_fields = ("kind", "key", "data", "created_at")

    tenant = tenant_key()
    kind = models.CharField(max_length=40)
    key = models.CharField(max_length=120, help_text="Makes it once, e.g. unreviewed:<sample id>.")
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "kind", "key"], name="notice_once_ux")]

    def __str__(self) -> str:
        return f"notice {self.pk}: {self.kind} {self.key}"


class WebhookDelivery(SealedTenantOwned):
    """One change, or one notice, for one endpoint: its message id (the `webhook-id` every attempt
    carries, so a receiver can drop a repeat), where it stands, and when it is tried next. Which
    change or notice goes to which endpoint under which id is sealed (a delivery deleted or forged
    around the application is named); where it stands is bookkeeping, written on every try, and
    is not."""

    seal_kind = "delivery"
    seal_fields = ("endpoint_id", "change_id", "notice_id", "msg_id", "created_at")

    class State(models.TextChoices):
        PENDING = "pending", "Waiting"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Gave up"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.PROTECT, related_name="deliveries", db_index=False
    )
    change = models.ForeignKey(
        MemoryChange, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    notice = models.ForeignKey(Notice, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    msg_id = models.CharField(max_length=40, unique=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField()
    # A worker holds a delivery while it sends it; one that died lets go when this passes.
    leased_until = models.DateTimeField(null=True, blank=True)
    # When a task to try it was last queued: the sweep queues it again only when none is waiting
    # (after a failed try), or the one queued was lost (WEBHOOK_LOST_AFTER_SECONDS).
    queued_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        # One delivery an endpoint per change and per notice. Each rule covers only the rows that
        # carry its kind (a partial unique index on PostgreSQL and SQLite): a plain (endpoint,
        # change) key would do there, as both let any number of NULLs in, but Oracle compares a
        # key's NULL parts as equal, so an endpoint's second notice (endpoint, NULL) would collide
        # with its first. Django drops conditional constraints on Oracle, where
        # sql/oracle/030_indexes.sql has each as a function-based unique index of the same name
        # (a row outside the condition has an all-NULL key, which Oracle does not index).
        # `nulls_distinct=False` over (endpoint, change, notice) would say the same on PostgreSQL
        # 15, but Django creates it on neither SQLite nor Oracle, so the tests would run unguarded.
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "change"],
                condition=Q(change__isnull=False),
                name="delivery_change_once_ux",
            ),
            models.UniqueConstraint(
                fields=["endpoint", "notice"],
                condition=Q(notice__isnull=False),
                name="delivery_notice_once_ux",
            ),
            models.CheckConstraint(
                condition=Q(change__isnull=False, notice__isnull=True)
                | Q(change__isnull=True, notice__isnull=False),
                name="delivery_change_or_notice_ck",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="delivery_due_ix"),
            models.Index(fields=["endpoint", "-id"], name="delivery_log_ix"),
            # How many wait and were given up, per endpoint: counted in the index, not the log.
            models.Index(fields=["endpoint", "state"], name="delivery_state_ix"),
        ]

    def __str__(self) -> str:
        what = f"change {self.change_id}" if self.change_id else f"notice {self.notice_id}"
        return f"delivery {self.msg_id} of {what} to endpoint {self.endpoint_id}"


class WebhookAttempt(TenantOwned):
    """One try at a delivery: when, the response code or the error, and how long it took. Written
    when the try starts; one without an end is a worker that stopped mid-send."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.PROTECT, related_name="tries", db_index=False
    )
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="attempt_number_ux")]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}"
