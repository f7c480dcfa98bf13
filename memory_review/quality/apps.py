from django.apps import AppConfig
from django.db.backends.signals import connection_created


class QualityConfig(AppConfig):
    """Sampled audits and the estimates they give (issue 31)."""

    name = "memory_review.quality"
    label = "quality"

    def ready(self):
        from . import sampling

        # SQLite has no SHA-256: the draw's keyed rank is given it as a function (PostgreSQL and
        # Oracle compute the same rank themselves).
        connection_created.connect(sampling.on_sqlite_connection, dispatch_uid="quality-sample-rank")
