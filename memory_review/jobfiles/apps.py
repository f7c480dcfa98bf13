from django.apps import AppConfig


class JobFilesConfig(AppConfig):
    """Files a Celery job writes for a person to download: exports too large to stream at a
    click, with who asked, progress, checksum, expiry and clean-up."""

    name = "memory_review.jobfiles"
    label = "jobfiles"

    def ready(self):
        from . import tasks  # noqa: F401 (web processes queue them by name: registered here too)
