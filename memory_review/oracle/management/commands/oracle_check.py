"""Prove on a live Oracle schema what sql/oracle/ promises (memory_review/oracle/checks.py)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from memory_review.oracle.checks import as_app_user, as_owner


class Command(BaseCommand):
    help = (
        "As the schema owner: no INVALID objects, VPD on every tenant table, indexes, triggers, the app "
        "user's grants exactly the map; then as the app user (ORACLE_APP_PASSWORD), raw queries proving "
        "VPD and the refused privileges. Exits non-zero naming every problem."
    )

    def add_arguments(self, parser):
        parser.add_argument("--app-user", default="memory_app")

    def handle(self, *args, app_user: str, **options):
        if connection.vendor != "oracle":
            raise CommandError(f"the database is {connection.vendor}, not Oracle: set ORACLE_DSN")
        password = settings.ORACLE_APP_PASSWORD
        if not password:
            raise CommandError(
                "set ORACLE_APP_PASSWORD (or ORACLE_APP_PASSWORD_FILE): the check logs in as the app user"
            )
        import oracledb

        connection.ensure_connection()
        owner = connection.settings_dict["USER"].upper()
        with connection.connection.cursor() as owner_cursor:
            report = as_owner(owner_cursor, app_user)
            app = oracledb.connect(user=app_user, password=password, dsn=connection.settings_dict["NAME"])
            try:
                with app.cursor() as app_cursor:
                    app_cursor.execute(f'ALTER SESSION SET CURRENT_SCHEMA = "{owner}"')
                    proof = as_app_user(app_cursor, owner_cursor, app_user)
            finally:
                app.close()
        report.proven += proof.proven
        report.problems += proof.problems
        for line in report.proven:
            self.stdout.write(f"ok   {line}")
        for line in report.problems:
            self.stdout.write(self.style.ERROR(f"FAIL {line}"))
        if report.problems:
            raise CommandError(f"{len(report.problems)} problem(s) in the Oracle set-up")
        self.stdout.write(self.style.SUCCESS(f"Oracle set-up proven: {len(report.proven)} checks."))
