from django.apps import AppConfig


class OracleConfig(AppConfig):
    name = "memory_review.oracle"
    label = "oracle"
