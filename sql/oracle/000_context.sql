-- Tenant context (DESIGN §6). Run as the schema owner (MEMORY_OWNER) after `manage.py migrate`.
-- The context itself, `CREATE CONTEXT memory_ctx USING memory_owner.memory_ctx_pkg`, is created
-- by a DBA (sql/docker-init/01_app_user.sh): only this package may write it. The web and worker
-- connect as MEMORY_APP, which owns no tables; the app calls memory_ctx_pkg.set_tenant at the
-- start of each request and Celery task, and clear after.
-- set_tenant refuses a tenant that does not exist or is not active, so a bug or a forged id
-- cannot point a session at rows of nobody's tenant.

CREATE OR REPLACE PACKAGE memory_ctx_pkg AS
  PROCEDURE set_tenant(p_tenant_id IN NUMBER);
  PROCEDURE clear;
END memory_ctx_pkg;
/

CREATE OR REPLACE PACKAGE BODY memory_ctx_pkg AS
  PROCEDURE set_tenant(p_tenant_id IN NUMBER) IS
    v_active NUMBER;
  BEGIN
    SELECT COUNT(*) INTO v_active FROM tenancy_tenant WHERE id = p_tenant_id AND is_active = 1;
    IF v_active = 0 THEN
      RAISE_APPLICATION_ERROR(-20010, 'memory_ctx_pkg.set_tenant: no active tenant ' || p_tenant_id);
    END IF;
    DBMS_SESSION.SET_CONTEXT('memory_ctx', 'tenant_id', TO_CHAR(p_tenant_id));
  END set_tenant;

  PROCEDURE clear IS
  BEGIN
    DBMS_SESSION.CLEAR_CONTEXT('memory_ctx', NULL, 'tenant_id');
  END clear;
END memory_ctx_pkg;
/
