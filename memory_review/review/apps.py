from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "memory_review.review"
    label = "review"

    def ready(self):
        # The pages' derived figures register here, so a Celery worker (which loads no URLconf)
        # knows how to compute them (calibration/figures.py).
        from . import calibration_page, disagreements  # noqa: F401
