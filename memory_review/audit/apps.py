from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "memory_review.audit"
    label = "audit"
