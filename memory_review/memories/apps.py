from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memory_review.memories"
    label = "memories"

    def ready(self):
        from memory_review.audit import sequencer

        from . import search  # noqa: F401  (registers the textcontains lookup)
        from .models import MemoryChange

        sequencer.register_feed(MemoryChange)  # the agents' feed: positions in commit order
