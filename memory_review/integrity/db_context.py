"""The tenant the database enforces (DESIGN §6).

On Oracle the VPD policies in sql/oracle/020_vpd.sql read SYS_CONTEXT('memory_ctx','tenant_id'),
which only the trusted package memory_ctx_pkg may set. The app sets it at the start of each
request (once the membership is known) and each Celery task, and clears it afterwards.
PostgreSQL gets the same value as the `app.tenant_id` setting; SQLite has no such thing.
"""

from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.db import DatabaseError, connection

_current: ContextVar[int | None] = ContextVar("db_tenant", default=None)


def current_tenant() -> int | None:
    """The tenant this thread's database context is set to, if any (for logs)."""
    return _current.get()


def set_tenant(tenant_id: int) -> None:
    _current.set(tenant_id)
    if connection.vendor == "oracle":
        with connection.cursor() as cursor:
            cursor.callproc("memory_ctx_pkg.set_tenant", [tenant_id])
    elif connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('app.tenant_id', %s, false)", [str(tenant_id)])


def clear_tenant() -> None:
    _current.set(None)
    if connection.connection is None:
        return  # nothing was opened, so nothing was set
    try:
        if connection.vendor == "oracle":
            with connection.cursor() as cursor:
                cursor.callproc("memory_ctx_pkg.clear")
        elif connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('app.tenant_id', '', false)")
    except DatabaseError:
        # Connections are kept from request to request and task to task: one whose tenant could
        # not be cleared is closed, so no later user of it inherits the tenant.
        connection.close()
        raise


@contextmanager
def tenant_context(tenant_id: int):
    """For Celery tasks and commands: the database sees this tenant until the block ends, then
    whatever it saw before (an eager task inside a request must not wipe the request's)."""
    previous = _current.get()
    set_tenant(tenant_id)
    try:
        yield
    finally:
        if previous is None:
            clear_tenant()
        else:
            set_tenant(previous)


def use_owner_schema(sender, connection, **kwargs) -> None:
    """connection_created hook: the Oracle app user does not own the tables it queries."""
    schema = getattr(settings, "ORACLE_SCHEMA", None)
    if connection.vendor == "oracle" and schema:
        with connection.cursor() as cursor:
            cursor.execute(f'ALTER SESSION SET CURRENT_SCHEMA = "{schema.upper()}"')
