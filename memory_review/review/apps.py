from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "memory_review.review"
    label = "review"
