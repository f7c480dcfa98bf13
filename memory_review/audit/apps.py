from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "memory_review.audit"
    label = "audit"

    def ready(self):
        from . import identities

        identities.connect()  # users, groups and sign-ins are sealed as Django writes them
