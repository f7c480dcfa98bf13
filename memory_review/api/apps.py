from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "memory_review.api"
    label = "api"
