from django.apps import AppConfig
from django.db.backends.signals import connection_created


class TenancyConfig(AppConfig):
    name = "memory_review.tenancy"
    label = "tenancy"

    def ready(self):
        from memory_review.integrity.db_context import use_owner_schema

        connection_created.connect(use_owner_schema, dispatch_uid="oracle-owner-schema")
