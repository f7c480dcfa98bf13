from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from memory_review.oracle.scripts import script_paths, statements


class Command(BaseCommand):
    help = "Apply sql/oracle/ (context, VPD, function-based indexes, triggers, grants) as the owner."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="print the statements only")

    def handle(self, *args, dry_run=False, **options):
        if connection.vendor != "oracle" and not dry_run:
            raise CommandError(
                f"the database is {connection.vendor}, not Oracle: set ORACLE_DSN, or use --dry-run"
            )
        for path in script_paths():
            self.stdout.write(f"-- {path.name}")
            for statement in statements(path.read_text()):
                if dry_run:
                    self.stdout.write(statement + "\n/")
                    continue
                with connection.cursor() as cursor:
                    cursor.execute(statement)
        if not dry_run:
            self.stdout.write(self.style.SUCCESS("Oracle scripts applied."))
