from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "memory_review.audit"
    label = "audit"

    def ready(self):
        from . import heads, identities, sequencer

        identities.connect()  # users, groups and sign-ins are sealed as Django writes them
        heads.link_now = sequencer.sequence  # AUDIT_SEQUENCER=inline: writers link their own rows
