from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memory_review.memories"
    label = "memories"
