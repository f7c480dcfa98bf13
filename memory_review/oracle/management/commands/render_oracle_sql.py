from django.core.management.base import BaseCommand

from memory_review.oracle.render import render
from memory_review.oracle.scripts import GENERATED, SQL_DIR


class Command(BaseCommand):
    help = f"Render the migrations as Oracle DDL, offline, into sql/oracle/{GENERATED}."

    def handle(self, *args, **options):
        path = SQL_DIR / GENERATED
        path.write_text(render())
        self.stdout.write(f"wrote {path}")
