from django.apps import AppConfig
from django.urls import register_converter


class ApiConfig(AppConfig):
    name = "memory_review.api"
    label = "api"

    def ready(self):
        from memory_review.params import PathId

        # Every id in a URL, the API's and the pages', before any URLconf reads `<id:...>`: Django's
        # `<int:...>` hands a view ids no database holds (memory_review/params.py).
        register_converter(PathId, "id")
