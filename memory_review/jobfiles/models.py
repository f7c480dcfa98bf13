"""A file produced by a job (issue 17, item 5): what was asked for, by whom, how far the worker
has got, and the file it wrote (its size and SHA-256), until it expires and is removed.

The row stays when the file goes: who exported what, and when, is kept."""

from django.db import models
from django.utils import timezone

from memory_review.tenancy.models import TenantOwned, tenant_key


class JobState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class JobFile(TenantOwned):
    tenant = tenant_key()
    kind = models.CharField(max_length=40, help_text="What the file is (kinds.py).")
    params = models.JSONField(default=dict, blank=True, help_text="What was asked for: the filters.")
    filename = models.CharField(max_length=200, help_text="The name it downloads as.")
    requested_by = models.CharField(max_length=120)
    requested_at = models.DateTimeField(default=timezone.now)
    state = models.CharField(max_length=10, choices=JobState.choices, default=JobState.QUEUED)
    error = models.CharField(max_length=1000, null=True, blank=True)
    rows = models.PositiveBigIntegerField(default=0, help_text="Rows written so far.")
    expected = models.PositiveBigIntegerField(null=True, blank=True, help_text="Rows to write.")
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes written so far.")
    sha256 = models.CharField(max_length=64, null=True, blank=True)
    path = models.CharField(max_length=300, null=True, blank=True, help_text="Its name in the storage.")
    started_at = models.DateTimeField(null=True, blank=True)
    beat_at = models.DateTimeField(null=True, blank=True, help_text="The worker last said it was alive.")
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    removed_at = models.DateTimeField(null=True, blank=True, help_text="When the expired file was deleted.")

    class Meta:
        indexes = [models.Index(fields=["tenant", "-requested_at"], name="jobfile_tenant_ix")]

    def __str__(self) -> str:
        return f"{self.filename} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (JobState.DONE, JobState.FAILED)

    @property
    def downloadable(self) -> bool:
        return self.state == JobState.DONE and self.removed_at is None

    @property
    def percent(self) -> int | None:
        if self.state == JobState.DONE:
            return 100
        if not self.expected:
            return None
        return min(99, self.rows * 100 // self.expected)
