from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memory_review.memories"
    label = "memories"

    def ready(self):
        from . import search  # noqa: F401  (registers the textcontains lookup)
