from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memory_review.memories"
    label = "memories"

    def ready(self):
        from memory_review.audit import sequencer

        from . import moves, search  # noqa: F401  (a memory's lifecycle; the textcontains lookup)
        from .models import MemoryChange

        sequencer.register_feed(MemoryChange)  # the agents' feed: positions in commit order
