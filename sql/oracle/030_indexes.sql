-- What Django's Oracle backend cannot express (DESIGN §8). Oracle has no partial indexes, and
-- Django silently drops conditional UniqueConstraints there, so each one in the models is a
-- function-based unique index here with the same name. IF NOT EXISTS (23ai) makes the file
-- safe to run again. Rows outside the condition map every
-- column to NULL, and Oracle does not index an all-NULL key, so only rows inside it compete.
-- Inside it, Oracle compares NULL scope columns as equal, which is what the models ask of
-- PostgreSQL with nulls_distinct=False. The code guards the same rule (lifecycle.transition).

-- memories.Memory memory_live_subject_uq: one live memory per subject and scope.
CREATE UNIQUE INDEX IF NOT EXISTS memory_live_subject_uq ON memories_memory (
  CASE WHEN status IN ('active', 'needs_review', 'frozen') AND deleted_at IS NULL THEN tenant_id END,
  CASE WHEN status IN ('active', 'needs_review', 'frozen') AND deleted_at IS NULL THEN user_id END,
  CASE WHEN status IN ('active', 'needs_review', 'frozen') AND deleted_at IS NULL THEN agent_id END,
  CASE WHEN status IN ('active', 'needs_review', 'frozen') AND deleted_at IS NULL THEN thread_id END,
  CASE WHEN status IN ('active', 'needs_review', 'frozen') AND deleted_at IS NULL THEN subject END
)
/

-- assessments.PolicyVersion policy_one_per_mode_uq: per tenant one active, at most one shadow.
CREATE UNIQUE INDEX IF NOT EXISTS policy_one_per_mode_uq ON assessments_policyversion (
  CASE WHEN mode IN ('active', 'shadow') THEN tenant_id END,
  CASE WHEN mode IN ('active', 'shadow') THEN mode END
)
/

-- assessments.Assessment assessment_one_per_event_uq: one invalidation assessment per event.
CREATE UNIQUE INDEX IF NOT EXISTS assessment_one_per_event_uq ON assessments_assessment (
  CASE WHEN purpose = 'invalidation' THEN event_id END,
  CASE WHEN purpose = 'invalidation' THEN purpose END
)
/

-- agents.WebhookDelivery delivery_change_once_ux and delivery_notice_once_ux: a delivery an endpoint
-- per change and per notice (agents 0003). A delivery carries one or the other, the other column
-- NULL; a plain (endpoint_id, change_id) key would make an endpoint's notice deliveries, all
-- (endpoint_id, NULL), collide with one another on Oracle, so each rule keys only its own rows.
CREATE UNIQUE INDEX IF NOT EXISTS delivery_change_once_ux ON agents_webhookdelivery (
  CASE WHEN change_id IS NOT NULL THEN endpoint_id END,
  change_id
)
/

CREATE UNIQUE INDEX IF NOT EXISTS delivery_notice_once_ux ON agents_webhookdelivery (
  CASE WHEN notice_id IS NOT NULL THEN endpoint_id END,
  notice_id
)
/

-- memories/search.py: searching subjects and content (the queue, the memories list, the audit
-- trail's subject filter). Oracle Text CONTEXT indexes, kept in step at each commit, with a word
-- list that indexes substrings, so the double-truncated '%word%' each search sends is an index
-- lookup rather than a scan of every token. The application adds an UPPER(..) LIKE for the
-- exact meaning (see search.py). The block creates the preference once (DRG-10701: it exists).
BEGIN
  CTX_DDL.CREATE_PREFERENCE('memory_review_substring', 'BASIC_WORDLIST');
  CTX_DDL.SET_ATTRIBUTE('memory_review_substring', 'SUBSTRING_INDEX', 'TRUE');
  CTX_DDL.SET_ATTRIBUTE('memory_review_substring', 'PREFIX_INDEX', 'TRUE');
EXCEPTION
  WHEN OTHERS THEN
    IF SQLCODE != -20000 THEN RAISE; END IF;
END;
/

-- Each a composite domain index (issue 29): FILTER BY tenant_id puts the tenant inside the text
-- index, so one tenant's search never reads another's matches (PostgreSQL's TenantText indexes,
-- memories/0013, do the same), and ORDER BY updated_at lets a search's newest rows come from the
-- index in order. Written to Oracle's documentation, not run (no Oracle server here). A database
-- created with the earlier plain CONTEXT indexes keeps them (IF NOT EXISTS): drop the three and
-- run this file again to take these.
CREATE INDEX IF NOT EXISTS memory_subject_text ON memories_memory (subject)
  INDEXTYPE IS CTXSYS.CONTEXT FILTER BY tenant_id, status ORDER BY updated_at DESC
  PARAMETERS ('WORDLIST memory_review_substring SYNC (ON COMMIT)')
/

CREATE INDEX IF NOT EXISTS memory_content_text ON memories_memory (content)
  INDEXTYPE IS CTXSYS.CONTEXT FILTER BY tenant_id, status ORDER BY updated_at DESC
  PARAMETERS ('WORDLIST memory_review_substring SYNC (ON COMMIT)')
/

CREATE INDEX IF NOT EXISTS candidate_subject_text ON assessments_promotioncandidate (subject)
  INDEXTYPE IS CTXSYS.CONTEXT FILTER BY tenant_id ORDER BY updated_at DESC
  PARAMETERS ('WORDLIST memory_review_substring SYNC (ON COMMIT)')
/

-- memories.Memory memory_event_ix (source_event_id, created_at, id): what else an event wrote, oldest first
-- (review/lineage.py). A plain index: Django's migration (memories 0012) creates it on Oracle as
-- it does elsewhere, so nothing is written here (a second CREATE of the same columns would fail
-- with ORA-01408). Listed so that this file names every index the issue-29 work added.

-- Positions given by the sequencer (issue 30, audit.0017 and memories.0017): a transition, a seal
-- and a feed change are written with seq NULL until the sequencer gives them one. PostgreSQL and
-- SQLite let any number of (tenant_id, NULL) keys into a unique index; Oracle compares them as
-- equal, so Django's UNIQUE (tenant_id, seq) would refuse a tenant's second waiting row. Each is
-- replaced by a unique index over the positioned rows only (a waiting row's key is all NULL, which
-- Oracle does not index), beside a plain (tenant_id, seq) index that the reads in position order
-- use and that finds the waiting rows (seq IS NULL with the tenant: tenant_id is never NULL).
BEGIN
  EXECUTE IMMEDIATE 'ALTER TABLE audit_transition DROP CONSTRAINT transition_tenant_seq_uq DROP INDEX';
EXCEPTION WHEN OTHERS THEN IF SQLCODE != -2443 THEN RAISE; END IF;  -- dropped already
END;
/
CREATE UNIQUE INDEX IF NOT EXISTS transition_tenant_seq_uq ON audit_transition (CASE WHEN seq IS NOT NULL THEN tenant_id END, seq)
/
CREATE INDEX IF NOT EXISTS transition_tenant_seq_ix ON audit_transition (tenant_id, seq)
/

BEGIN
  EXECUTE IMMEDIATE 'ALTER TABLE audit_seal DROP CONSTRAINT seal_tenant_seq_uq DROP INDEX';
EXCEPTION WHEN OTHERS THEN IF SQLCODE != -2443 THEN RAISE; END IF;  -- dropped already
END;
/
CREATE UNIQUE INDEX IF NOT EXISTS seal_tenant_seq_uq ON audit_seal (CASE WHEN seq IS NOT NULL THEN tenant_id END, seq)
/
CREATE INDEX IF NOT EXISTS seal_tenant_seq_ix ON audit_seal (tenant_id, seq)
/

BEGIN
  EXECUTE IMMEDIATE 'ALTER TABLE memories_memorychange DROP CONSTRAINT memchange_tenant_seq_uq DROP INDEX';
EXCEPTION WHEN OTHERS THEN IF SQLCODE != -2443 THEN RAISE; END IF;  -- dropped already
END;
/
CREATE UNIQUE INDEX IF NOT EXISTS memchange_tenant_seq_uq ON memories_memorychange (CASE WHEN seq IS NOT NULL THEN tenant_id END, seq)
/
CREATE INDEX IF NOT EXISTS memchange_tenant_seq_ix ON memories_memorychange (tenant_id, seq)
/
