"""What agents report back: which memories each response used (issue 16, item 4)."""

from django.db import models

from memory_review.memories.models import Memory
from memory_review.tenancy.models import SealedTenantOwned


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

    memory = models.ForeignKey(Memory, on_delete=models.PROTECT, related_name="receipts")
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
