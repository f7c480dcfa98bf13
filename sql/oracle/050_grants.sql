-- The web and worker connect as MEMORY_APP, which owns nothing and so is bound by VPD.
-- Create it once as a DBA:  CREATE USER memory_app IDENTIFIED BY "...";
--                           GRANT CREATE SESSION TO memory_app;
-- then run this file as the owner. MEMORY_APP sets CURRENT_SCHEMA to the owner on connect
-- (ORACLE_SCHEMA in settings), so Django's unqualified table names resolve.

BEGIN
  FOR t IN (SELECT table_name FROM user_tables) LOOP
    EXECUTE IMMEDIATE 'GRANT SELECT, INSERT, UPDATE, DELETE ON "' || t.table_name || '" TO memory_app';
  END LOOP;
  -- Audit rows are appended, never changed: take back what the loop gave.
  EXECUTE IMMEDIATE 'REVOKE UPDATE, DELETE ON audit_transition FROM memory_app';
  EXECUTE IMMEDIATE 'GRANT EXECUTE ON memory_ctx_pkg TO memory_app';
END;
/
