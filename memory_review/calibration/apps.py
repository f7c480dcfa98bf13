from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "memory_review.calibration"
    label = "calibration"
