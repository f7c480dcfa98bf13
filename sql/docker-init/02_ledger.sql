-- Runs once as SYSDBA in FREEPDB1 (see 01_app_user.sql). A ledger of every audit row's hash in
-- an Oracle 23ai blockchain table, owned by a schema of its own: neither the application nor
-- the owner of the application's tables can change or remove its rows, and the database itself
-- chains them (SHA2-512). docs/audit.md says how an auditor checks it (DBMS_BLOCKCHAIN_TABLE).
ALTER SESSION SET CONTAINER = FREEPDB1;
CREATE USER memory_ledger NO AUTHENTICATION QUOTA 1G ON users;
CREATE BLOCKCHAIN TABLE memory_ledger.transition_ledger (
  tenant_id   NUMBER(19)   NOT NULL,
  seq         NUMBER(19)   NOT NULL,
  row_hash    VARCHAR2(64) NOT NULL,
  key_id      VARCHAR2(32),
  recorded_at TIMESTAMP WITH TIME ZONE NOT NULL
)
NO DROP UNTIL 365 DAYS IDLE
NO DELETE UNTIL 365 DAYS AFTER INSERT
HASHING USING "SHA2_512" VERSION "v2";
-- The owner's trigger (sql/oracle/045_ledger.sql) appends; a direct grant, as triggers need.
GRANT INSERT, SELECT ON memory_ledger.transition_ledger TO memory_owner;
