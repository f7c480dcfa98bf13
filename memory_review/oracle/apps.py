from django.apps import AppConfig, apps


class OracleConfig(AppConfig):
    name = "memory_review.oracle"
    label = "oracle"

    def ready(self):
        """Every model CharField (NVARCHAR2 on Oracle) validates its length in UTF-16 units, so
        model forms and the admin refuse what Oracle would (memory_review/textlimits.py)."""
        from memory_review.textlimits import MaxUnitsValidator, without_code_point_limits

        for model in apps.get_models():
            for field in model._meta.fields:
                if field.get_internal_type() in ("CharField", "SlugField") and field.max_length:
                    field.validators[:] = [
                        *without_code_point_limits(field.validators),
                        MaxUnitsValidator(field.max_length),
                    ]
