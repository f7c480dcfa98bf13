from django.apps import AppConfig


class AssessmentsConfig(AppConfig):
    name = "memory_review.assessments"
    label = "assessments"
