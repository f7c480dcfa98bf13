-- Every transition's hash also goes into the blockchain table MEMORY_LEDGER.TRANSITION_LEDGER
-- (created by a DBA: sql/docker-init/02_ledger.sql), in the same transaction as the row. A
-- database administrator who rewrites or removes audit rows cannot do the same to the ledger:
-- comparing the two (docs/audit.md) shows what changed.

CREATE OR REPLACE TRIGGER audit_transition_ledger
  AFTER INSERT ON audit_transition
  FOR EACH ROW
BEGIN
  INSERT INTO memory_ledger.transition_ledger (tenant_id, seq, row_hash, key_id, recorded_at)
  VALUES (:NEW.tenant_id, :NEW.seq, :NEW.hash, :NEW.key_id, SYSTIMESTAMP);
END audit_transition_ledger;
/
