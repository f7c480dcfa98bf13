#!/bin/bash
# Runs once, as SYSDBA, when the Oracle container first creates its database (gvenzl/oracle-free
# runs *.sh and *.sql in /container-entrypoint-initdb.d in name order). The image creates the
# table owner MEMORY_OWNER from APP_USER; this adds what only a DBA should do:
#   * MEMORY_APP, the user the web and worker connect as: it owns nothing, so VPD binds it, and
#     its password comes from the environment (ORACLE_APP_PASSWORD in compose), never a file;
#   * the tenant context, bound to the owner's package. Creating it here means the owner never
#     holds CREATE ANY CONTEXT (a system privilege that could bind any context to any package).
# Elsewhere, a DBA runs the same statements by hand (docs/oracle.md).
set -euo pipefail
: "${MEMORY_APP_PASSWORD:?set ORACLE_APP_PASSWORD for the oracle service}"
case "$MEMORY_APP_PASSWORD" in *'"'*) echo "the app password cannot contain a double quote" >&2; exit 1;; esac

sqlplus -s / as sysdba <<SQL
WHENEVER SQLERROR EXIT SQL.SQLCODE
SET DEFINE OFF
ALTER SESSION SET CONTAINER = FREEPDB1;
CREATE USER memory_app IDENTIFIED BY "${MEMORY_APP_PASSWORD}";
GRANT CREATE SESSION TO memory_app;
CREATE OR REPLACE CONTEXT memory_ctx USING memory_owner.memory_ctx_pkg;
GRANT CREATE TRIGGER, CREATE PROCEDURE TO memory_owner;
GRANT EXECUTE ON DBMS_RLS TO memory_owner;
GRANT EXECUTE ON DBMS_SESSION TO memory_owner;
SQL
