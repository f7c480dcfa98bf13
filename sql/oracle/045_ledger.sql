-- Every transition's hash also goes into the blockchain table MEMORY_LEDGER.TRANSITION_LEDGER
-- (created by a DBA: sql/docker-init/02_ledger.sql), in the same transaction as its position. A
-- database administrator who rewrites or removes audit rows cannot do the same to the ledger:
-- comparing the two (docs/audit.md) shows what changed.

CREATE OR REPLACE TRIGGER audit_transition_ledger
  AFTER UPDATE OF seq ON audit_transition
  FOR EACH ROW
  -- A row is written without its position; the ledger records it when the sequencer links it
  -- (issue 30), in the sequencer's transaction, with the hash that links it.
  WHEN (OLD.seq IS NULL AND NEW.seq IS NOT NULL)
BEGIN
  INSERT INTO memory_ledger.transition_ledger (tenant_id, seq, row_hash, key_id, recorded_at)
  VALUES (:NEW.tenant_id, :NEW.seq, :NEW.hash, :NEW.key_id, SYSTIMESTAMP);
END audit_transition_ledger;
/
