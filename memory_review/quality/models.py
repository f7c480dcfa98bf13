"""A sampled audit's draws (issue 31, item 1): what was drawn, from which population, by which
seed, and the items, each sealed as it is written, so the sample an estimate rests on is the
sample that was drawn."""

from django.conf import settings
from django.db import models

from memory_review.audit.models import Transition
from memory_review.memories.models import Memory
from memory_review.tenancy.models import SealedTenantOwned, tenant_key


class Population(models.TextChoices):
    UNREVIEWED = "unreviewed", "memories in force that no person reviewed"
    DECISIONS = "decisions", "the policy's automatic decisions"


class AuditSample(SealedTenantOwned):
    """One draw. `strata` lists each stratum as drawn: its key (agent, channel, kind, decision),
    how many items it held and how many were drawn; an item's `stratum` is its place in the
    list. Anyone with the seed can draw again and get the same items (quality/sampling.py)."""

    seal_kind = "audit_sample"
    seal_fields = (
        "population", "period_start", "period_end", "seed", "precision", "confidence", "budget",
        "labels_asked", "strata", "items", "drawn_by", "drawn_at",
    )  # fmt: skip

    tenant = tenant_key()
    population = models.CharField(max_length=12, choices=Population.choices)
    period_start = models.DateTimeField(
        null=True, blank=True, help_text="Decisions from (None: all before the end)."
    )
    period_end = models.DateTimeField(help_text="Decisions until, or when the memories in force were read.")
    seed = models.CharField(max_length=64, help_text="Hex; each item's rank is SHA-256 of seed:id.")
    precision = models.FloatField(
        help_text="The half-width asked for each stratum's rate (0.03: +-3 points)."
    )
    confidence = models.FloatField(default=0.95)
    budget = models.PositiveIntegerField(help_text="The labels the lead would spend on it, at most.")
    labels_asked = models.PositiveIntegerField(
        help_text="The labels the precision asked for in every stratum."
    )
    strata = models.JSONField(help_text="[{key, population, sampled}] in the items' stratum order.")
    items = models.PositiveIntegerField()
    drawn_by = models.CharField(max_length=120)
    drawn_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "population", "-drawn_at"], name="auditsample_tenant_ix")]

    def __str__(self) -> str:
        return f"audit sample {self.pk}: {self.items} {self.population} items"


class AuditItem(SealedTenantOwned):
    """One item drawn: the memory, and for a decision the move that made it."""

    seal_kind = "audit_item"
    seal_fields = ("sample_id", "stratum", "memory_id", "transition_id", "rank")

    sample = models.ForeignKey(AuditSample, on_delete=models.PROTECT, related_name="drawn", db_index=False)
    stratum = models.PositiveIntegerField()
    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="+")
    transition = models.ForeignKey(
        Transition, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    rank = models.CharField(max_length=16, help_text="The first 15 hex digits of its keyed hash.")

    class Meta:
        indexes = [models.Index(fields=["sample", "stratum", "rank"], name="audititem_sample_ix")]

    def __str__(self) -> str:
        return f"audit item {self.pk} of sample {self.sample_id}: memory {self.memory_id}"


class Answer(models.TextChoices):
    TRUE = "true", "true"
    FALSE = "false", "not true"


class AuditLabel(SealedTenantOwned):
    """A person's answer for an item, blind to what the policy did: is the memory true, given
    its evidence? Whether the item was wrong follows from its stratum's decision (a memory kept
    in force that is not true, or a true one the policy contradicted or superseded:
    quality/results.py). Kept as the labeling stream keeps its labels: never rewritten,
    withdrawn by undo, and a lead's ruling (`adjudicated`) is a label of its own that wins where
    labelers disagree (quality/results.py, `ruling`)."""

    seal_kind = "audit_label"
    seal_fields = ("item_id", "labeler_id", "outcome", "note", "adjudicated", "withdrawn_at", "created_at")

    item = models.ForeignKey(AuditItem, on_delete=models.PROTECT, related_name="labels", db_index=False)
    labeler = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=8, choices=Answer.choices)
    note = models.CharField(max_length=500, null=True, blank=True)
    adjudicated = models.BooleanField(default=False)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["item", "withdrawn_at"], name="auditlabel_item_ix")]

    def __str__(self) -> str:
        return f"audit label {self.pk}: {self.outcome}"


class AuditPlan(SealedTenantOwned):
    """How a tenant's sampled audits are drawn and labeled, as its lead set it (issue 31, item 1):
    how often (daily unless they say otherwise; 0 turns the schedule off), the precision each
    stratum's rate is drawn for, the labels a draw may spend at most, and the share of the
    labeling stream given to audit items beside the threshold items. A tenant without a row has
    the defaults (quality/schedule.py, `plan_of`). Sealed: a schedule quietly turned off, or a
    budget cut around the application, is named by verify_audit."""

    seal_kind = "audit_plan"
    seal_fields = (
        "every_days", "precision", "confidence", "budget", "share", "gate_target", "changed_by", "changed_at",
    )  # fmt: skip

    every_days = models.PositiveSmallIntegerField(default=1, help_text="Days between draws; 0: no schedule.")
    precision = models.FloatField(default=0.03, help_text="The half-width asked of each stratum's rate.")
    confidence = models.FloatField(default=0.95)
    budget = models.PositiveIntegerField(default=400, help_text="Labels a draw may ask for, at most.")
    share = models.FloatField(
        default=0.25, help_text="The share of a labeler's stream given to audit items (0 to 1)."
    )
    gate_target = models.FloatField(
        null=True,
        blank=True,
        help_text="The policy kills alone only where their measured precision's lower bound is at "
        "least this (0.95); None: no gate (quality/gate.py).",
    )
    changed_by = models.CharField(max_length=120)
    changed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="auditplan_one_ux")]

    def __str__(self) -> str:
        return f"audit plan of tenant {self.tenant_id}: every {self.every_days} day(s)"


class GateChange(SealedTenantOwned):
    """The gate opening or closing for one kind of automatic move in one stratum (issue 31, item 3):
    what the sampled audits measured (labels, wrong, the precision's lower bound), against which
    target, and when. Written only when the state changes; the newest row for a stratum is its
    state, and the pipeline acts on these rows (quality/gate.py), so every move it made alone, or
    held for a person, rests on a sealed measurement."""

    seal_kind = "gate_change"
    seal_fields = (
        "agent", "channel", "kind", "decision", "is_open", "labels", "wrong", "precision_low", "target",
        "changed_by", "changed_at",
    )  # fmt: skip

    tenant = tenant_key()
    agent = models.CharField(max_length=128, blank=True)
    channel = models.CharField(max_length=16)
    kind = models.CharField(max_length=16)
    decision = models.CharField(max_length=16, help_text="contradicted or superseded")
    is_open = models.BooleanField()
    labels = models.PositiveIntegerField()
    wrong = models.PositiveIntegerField()
    precision_low = models.FloatField(null=True, blank=True, help_text="None: nothing measured.")
    target = models.FloatField()
    changed_by = models.CharField(max_length=120)
    changed_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "changed_at"], name="gatechange_tenant_ix")]

    def __str__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"gate {state} for {self.decision} in {self.agent or '-'}/{self.channel}/{self.kind}"
