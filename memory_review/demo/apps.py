from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "memory_review.demo"
    label = "demo"
