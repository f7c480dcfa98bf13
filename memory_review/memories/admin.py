"""Memories in Django's admin, read-only: every change goes through the lifecycle and the review
screens, never an admin form (which would write `status` without an audit row)."""

from django.contrib import admin

from memory_review.tenancy.admin import ReadOnlyAdmin

from .models import Memory


@admin.register(Memory)
class MemoryAdmin(ReadOnlyAdmin):
    list_display = ("subject", "kind", "status", "p_true", "flagged_at", "tenant", "updated_at")
    list_filter = ("status", "kind", "tenant")
    search_fields = ("subject",)
    list_select_related = ("tenant",)
    ordering = ("-updated_at", "-id")
    show_full_result_count = False
