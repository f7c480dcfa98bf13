from django.apps import AppConfig


class ComplianceConfig(AppConfig):
    name = "memory_review.compliance"
    label = "compliance"

    def ready(self):
        # verify_audit also asks whether the two-person rule held (audit/checks.py runs it).
        from memory_review.audit import checks

        from . import security

        if security.rule_problem not in checks.RULES:
            checks.RULES.append(security.rule_problem)
