from django.apps import AppConfig


class AssessmentsConfig(AppConfig):
    name = "memory_review.assessments"
    label = "assessments"

    def ready(self):
        from . import moves  # noqa: F401  (a proposed memory's lifecycle)
