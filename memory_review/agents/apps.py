from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """What agents read and report: what is in force for a scope, the change feed, receipts."""

    name = "memory_review.agents"
    label = "agents"
