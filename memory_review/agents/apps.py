from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """What agents read, hear and report: what is in force for a scope, the change feed, webhooks
    and receipts."""

    name = "memory_review.agents"
    label = "agents"

    def ready(self):
        from memory_review.audit.sequencer import positioned
        from memory_review.memories.changes import change_recorded

        from . import targets, tasks  # noqa: F401 (tasks: web processes queue them by name; targets: its check)
        from .webhooks import on_change, on_positioned

        change_recorded.connect(on_change, dispatch_uid="agents.webhooks.on_change")
        positioned.connect(on_positioned, dispatch_uid="agents.webhooks.on_positioned")
