from django.apps import AppConfig
from django.db.backends.signals import connection_created


class QualityConfig(AppConfig):
    """Sampled audits and the estimates they give (issue 31)."""

    name = "memory_review.quality"
    label = "quality"

    def ready(self):
        from memory_review.assessments.policy import kill_asked

        from . import gate, sampling

        # The policy asks before it kills a memory alone: the gate answers (quality/gate.py).
        kill_asked.connect(gate.on_kill_asked, dispatch_uid="quality-gate")

        # SQLite has no SHA-256: the draw's keyed rank is given it as a function (PostgreSQL and
        # Oracle compute the same rank themselves).
        connection_created.connect(sampling.on_sqlite_connection, dispatch_uid="quality-sample-rank")
