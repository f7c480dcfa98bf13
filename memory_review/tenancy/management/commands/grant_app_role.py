"""PostgreSQL: give the role the web and worker connect as exactly what the code needs
(memory_review/tenancy/grants.py). Run as the tables' owner after every migrate; safe to repeat.
Oracle gets the same map from sql/oracle/050_grants.sql (apply_oracle_sql)."""

import re

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from memory_review.tenancy.grants import APP_GRANTS, postgres_statements, unmapped


class Command(BaseCommand):
    help = "Grant a PostgreSQL role the app's least privileges, table by table (revoking the rest)."

    def add_arguments(self, parser):
        parser.add_argument("role", help="the role the app connects as (it must own no tables)")
        parser.add_argument("--dry-run", action="store_true", help="print the statements only")

    def handle(self, *args, role: str, dry_run=False, **options):
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
            raise CommandError(f"{role!r} is not a plain role name (lower-case letters, digits, _)")
        if dry_run:
            self.stdout.write(";\n".join(postgres_statements(role)) + ";")
            return
        if connection.vendor != "postgresql":
            raise CommandError(
                f"the database is {connection.vendor}: this is for PostgreSQL (Oracle: apply_oracle_sql)"
            )
        missing = unmapped(connection.introspection.table_names())
        if missing:
            raise CommandError(
                f"no decision for {', '.join(missing)}: "
                "add each to APP_GRANTS in memory_review/tenancy/grants.py"
            )
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in postgres_statements(role):
                cursor.execute(statement)
        self.stdout.write(self.style.SUCCESS(f"{role}: least privileges on {len(APP_GRANTS)} tables."))
