-- Runs once when the Oracle container first creates its database (gvenzl/oracle-free runs
-- *.sql in /container-entrypoint-initdb.d as SYSDBA in FREEPDB1). The image itself creates
-- MEMORY_OWNER from APP_USER; this adds the application user, which owns no tables.
ALTER SESSION SET CONTAINER = FREEPDB1;
CREATE USER memory_app IDENTIFIED BY "memory_app_pw";
GRANT CREATE SESSION TO memory_app;
-- The owner creates the context and VPD policies in sql/oracle/.
GRANT CREATE ANY CONTEXT, CREATE TRIGGER, CREATE PROCEDURE TO memory_owner;
GRANT EXECUTE ON DBMS_RLS TO memory_owner;
GRANT EXECUTE ON DBMS_SESSION TO memory_owner;
