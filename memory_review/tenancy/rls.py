"""PostgreSQL row-level security: the same isolation as Oracle's VPD (sql/oracle/020_vpd.sql).

Every table that carries a tenant gets a policy keyed on the `app.tenant_id` setting, which the
app sets per request and Celery task (memory_review.integrity.db_context) and clears after. With no
tenant set the predicate matches nothing. The table owner (who runs migrations, seed_demo and
verify_audit) is exempt, as PostgreSQL exempts owners unless FORCE is used; production web and
worker processes connect as a role that owns nothing. Migrations that add a tenant table call
these; other backends have nothing to do.
"""

PREDICATE = "tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint"


def enable(schema_editor, tables: list[str]) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in tables:
        schema_editor.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        schema_editor.execute(
            f"CREATE POLICY tenant_isolation ON {table} USING ({PREDICATE}) WITH CHECK ({PREDICATE})"
        )


def disable(schema_editor, tables: list[str]) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in tables:
        schema_editor.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        schema_editor.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
