from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "memory_review.review"
    label = "review"

    def ready(self):
        # The pages' derived figures register here, so a Celery worker (which loads no URLconf)
        # knows how to compute them (calibration/figures.py).
        # Every download the screens offer, so a worker can write any of them as a file (jobfiles).
        from . import (  # noqa: F401
            agreement_page,
            calibration_page,
            disagreements,
            downloads,  # noqa: F401
            team_page,
        )
