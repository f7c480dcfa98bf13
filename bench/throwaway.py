"""A database the benchmarks fill and throw away: a temporary SQLite file, or, with
`--postgres URL` on the command line, a new database on that PostgreSQL server. Import this
before Django is set up; call drop() when done."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PG_SERVER = sys.argv[sys.argv.index("--postgres") + 1] if "--postgres" in sys.argv else None
PG_DB = f"bench_{os.getpid()}"

if PG_SERVER:
    import psycopg

    with psycopg.connect(f"{PG_SERVER.rstrip('/')}/postgres", autocommit=True) as server:
        server.execute(f"CREATE DATABASE {PG_DB}")
    os.environ["DATABASE_URL"] = f"{PG_SERVER.rstrip('/')}/{PG_DB}"
else:
    os.environ.pop("DATABASE_URL", None)
    os.environ["SQLITE_PATH"] = str(Path(tempfile.mkdtemp()) / "bench.sqlite3")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_review.settings")
os.environ["TYPESAFE_API_KEY"] = ""
os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(24).hex())  # a throwaway database's key
os.environ.setdefault("CACHE_URL", "locmem://")


def drop() -> None:
    """Remove the PostgreSQL database (a temporary SQLite file goes with its folder)."""
    if not PG_SERVER:
        return
    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{PG_SERVER.rstrip('/')}/postgres", autocommit=True) as server:
        server.execute(f"DROP DATABASE {PG_DB}")
