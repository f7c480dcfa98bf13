-- Transitions are append-only in the database (SQLite and PostgreSQL get the same rule from
-- migration audit.0002). The hash chain shows tampering; this stops the ordinary kind.

CREATE OR REPLACE TRIGGER audit_transition_append_only
  BEFORE UPDATE OR DELETE ON audit_transition
BEGIN
  RAISE_APPLICATION_ERROR(-20001, 'audit_transition is append-only');
END audit_transition_append_only;
/
