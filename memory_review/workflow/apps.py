from django.apps import AppConfig


class WorkflowConfig(AppConfig):
    name = "memory_review.workflow"
    label = "workflow"
