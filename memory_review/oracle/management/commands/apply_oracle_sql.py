from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from memory_review.oracle.apply import OracleSetupError, apply_scripts
from memory_review.oracle.scripts import script_paths, statements


class Command(BaseCommand):
    help = (
        "Apply sql/oracle/ (tenant context package, VPD, function-based indexes, triggers, grants) as "
        "the schema owner, after migrate. Safe to run again; stops at the first statement that fails "
        "or unit that does not compile, naming it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="print the statements only")

    def handle(self, *args, dry_run=False, **options):
        if dry_run:
            for path in script_paths():
                self.stdout.write(f"-- {path.name}")
                for statement in statements(path.read_text()):
                    self.stdout.write(statement + "\n/")
            return
        if connection.vendor != "oracle":
            raise CommandError(
                f"the database is {connection.vendor}, not Oracle: set ORACLE_DSN, or use --dry-run"
            )
        connection.ensure_connection()
        try:
            # The driver's own connection: Django's cursor would strip each unit's final ';'.
            ran = apply_scripts(connection.connection, script_paths(), report=self.stdout.write)
        except OracleSetupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"Oracle scripts applied: {ran} statements."))
