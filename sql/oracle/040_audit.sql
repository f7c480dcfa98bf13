-- Transitions and seals are append-only in the database (SQLite and PostgreSQL get the same rules
-- from migrations audit.0002 and audit.0007). The keyed chains show tampering; this stops the
-- ordinary kind. One update is allowed on a transition: an erasure blanking its free text
-- (reason to the ERASED marker, request id to NULL, erased_by set once), every other column as
-- it was; the keyed hashes of the text (reason_mac, request_id_mac) stay and still verify. And one
-- on a transition or a seal written with no position (issue 30): the sequencer giving it its
-- position (seq, prev_hash, hash, a seal's trail_seq), once, every other column as it was.

CREATE OR REPLACE TRIGGER audit_transition_append_only
  BEFORE UPDATE OR DELETE ON audit_transition
  FOR EACH ROW
BEGIN
  IF UPDATING
     AND :OLD.erased_by IS NULL AND :NEW.erased_by IS NOT NULL
     AND :NEW.reason = '[erased]' AND :NEW.request_id IS NULL
     AND :NEW.id = :OLD.id AND :NEW.tenant_id = :OLD.tenant_id AND DECODE(:NEW.seq, :OLD.seq, 1, 0) = 1
     AND DECODE(:NEW.memory_id, :OLD.memory_id, 1, 0) = 1
     AND DECODE(:NEW.candidate_id, :OLD.candidate_id, 1, 0) = 1
     AND :NEW.from_status = :OLD.from_status AND :NEW.to_status = :OLD.to_status
     AND :NEW.action = :OLD.action AND :NEW.actor = :OLD.actor
     AND DECODE(:NEW.reason_mac, :OLD.reason_mac, 1, 0) = 1
     AND DECODE(:NEW.request_id_mac, :OLD.request_id_mac, 1, 0) = 1
     AND DECODE(:NEW.content_hash, :OLD.content_hash, 1, 0) = 1
     AND DECODE(:NEW.verdict_id, :OLD.verdict_id, 1, 0) = 1
     AND DECODE(:NEW.row_version, :OLD.row_version, 1, 0) = 1
     AND :NEW.created_at = :OLD.created_at AND DECODE(:NEW.prev_hash, :OLD.prev_hash, 1, 0) = 1
     AND DECODE(:NEW.hash, :OLD.hash, 1, 0) = 1 AND DECODE(:NEW.key_id, :OLD.key_id, 1, 0) = 1
     AND DECODE(:NEW.leaf, :OLD.leaf, 1, 0) = 1
  THEN
    NULL;  -- an erasure blanks the text; the keyed hashes beside it stay
  ELSIF UPDATING
     AND :OLD.seq IS NULL AND :NEW.seq IS NOT NULL AND :NEW.prev_hash IS NOT NULL AND :NEW.hash IS NOT NULL
     AND :NEW.id = :OLD.id AND :NEW.tenant_id = :OLD.tenant_id
     AND DECODE(:NEW.memory_id, :OLD.memory_id, 1, 0) = 1
     AND DECODE(:NEW.candidate_id, :OLD.candidate_id, 1, 0) = 1
     AND :NEW.from_status = :OLD.from_status AND :NEW.to_status = :OLD.to_status
     AND :NEW.action = :OLD.action AND :NEW.actor = :OLD.actor
     AND DECODE(:NEW.reason, :OLD.reason, 1, 0) = 1
     AND DECODE(:NEW.reason_mac, :OLD.reason_mac, 1, 0) = 1
     AND DECODE(:NEW.request_id, :OLD.request_id, 1, 0) = 1
     AND DECODE(:NEW.request_id_mac, :OLD.request_id_mac, 1, 0) = 1
     AND DECODE(:NEW.content_hash, :OLD.content_hash, 1, 0) = 1
     AND DECODE(:NEW.verdict_id, :OLD.verdict_id, 1, 0) = 1
     AND DECODE(:NEW.row_version, :OLD.row_version, 1, 0) = 1
     AND DECODE(:NEW.erased_by, :OLD.erased_by, 1, 0) = 1
     AND :NEW.created_at = :OLD.created_at AND DECODE(:NEW.key_id, :OLD.key_id, 1, 0) = 1
     AND DECODE(:NEW.leaf, :OLD.leaf, 1, 0) = 1
  THEN
    NULL;  -- the sequencer gives a waiting row its position, once (audit/sequencer.py)
  ELSE     -- anything else, a condition that is unknown (NULL) included
    RAISE_APPLICATION_ERROR(-20001, 'audit_transition is append-only');
  END IF;
END audit_transition_append_only;
/

CREATE OR REPLACE TRIGGER audit_seal_append_only
  BEFORE UPDATE OR DELETE ON audit_seal
  FOR EACH ROW
BEGIN
  IF UPDATING
     AND :OLD.seq IS NULL AND :NEW.seq IS NOT NULL AND :NEW.prev_hash IS NOT NULL
     AND :NEW.trail_seq IS NOT NULL AND :NEW.hash IS NOT NULL
     AND :NEW.id = :OLD.id AND :NEW.tenant_id = :OLD.tenant_id AND :NEW.kind = :OLD.kind
     AND :NEW.object_id = :OLD.object_id AND :NEW.action = :OLD.action AND :NEW.digest = :OLD.digest
     AND :NEW.actor = :OLD.actor AND DECODE(:NEW.erasure, :OLD.erasure, 1, 0) = 1
     AND :NEW.created_at = :OLD.created_at AND :NEW.key_id = :OLD.key_id
     AND DECODE(:NEW.leaf, :OLD.leaf, 1, 0) = 1
     AND ((:NEW.members IS NULL AND :OLD.members IS NULL)
          OR DBMS_LOB.COMPARE(:NEW.members, :OLD.members) = 0)  -- a group's rows (audit.0023)
  THEN
    NULL;  -- the sequencer gives a waiting seal its position, once (audit/sequencer.py)
  ELSE
    RAISE_APPLICATION_ERROR(-20001, 'audit_seal is append-only');
  END IF;
END audit_seal_append_only;
/
