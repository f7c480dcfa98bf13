from django.core.management.base import BaseCommand

from memory_review.oracle.render import render, render_grants
from memory_review.oracle.scripts import GENERATED, GRANTS, SQL_DIR


class Command(BaseCommand):
    help = (
        f"Render, offline, the migrations as Oracle DDL into sql/oracle/{GENERATED} and the app user's "
        f"grants (memory_review/tenancy/grants.py) into sql/oracle/{GRANTS}."
    )

    def handle(self, *args, **options):
        for name, text in ((GENERATED, render()), (GRANTS, render_grants())):
            path = SQL_DIR / name
            path.write_text(text)
            self.stdout.write(f"wrote {path}")
