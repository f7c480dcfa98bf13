-- Tenant context (DESIGN §6). Run as the schema owner (MEMORY_OWNER) after `manage.py migrate`.
-- The web and worker processes connect as MEMORY_APP, which owns no tables; the app calls
-- memory_ctx_pkg.set_tenant at the start of each request and Celery task and clear after.
-- Only this package may write the context: that is what CREATE CONTEXT ... USING means.

CREATE OR REPLACE CONTEXT memory_ctx USING memory_ctx_pkg;
/

CREATE OR REPLACE PACKAGE memory_ctx_pkg AS
  PROCEDURE set_tenant(p_tenant_id IN NUMBER);
  PROCEDURE clear;
END memory_ctx_pkg;
/

CREATE OR REPLACE PACKAGE BODY memory_ctx_pkg AS
  PROCEDURE set_tenant(p_tenant_id IN NUMBER) IS
  BEGIN
    DBMS_SESSION.SET_CONTEXT('memory_ctx', 'tenant_id', TO_CHAR(p_tenant_id));
  END set_tenant;

  PROCEDURE clear IS
  BEGIN
    DBMS_SESSION.CLEAR_CONTEXT('memory_ctx', NULL, 'tenant_id');
  END clear;
END memory_ctx_pkg;
/
