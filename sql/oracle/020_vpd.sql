-- Row-level tenant isolation with Virtual Private Database (DESIGN §6, seeds/004).
-- Every tenant table gets a policy that appends tenant_id = SYS_CONTEXT('memory_ctx','tenant_id')
-- to SELECT, INSERT, UPDATE and DELETE. update_check => TRUE makes INSERT and UPDATE refuse rows
-- of another tenant (the VPD form of WITH CHECK OPTION). With no tenant in the context the
-- predicate matches nothing: a request that forgot to set it sees no rows rather than all rows.
-- The schema owner is exempt (it runs migrations and maintenance), the application user is not.
-- A test keeps this list in step with the models that carry a tenant. TENANCY_TENANT and
-- TENANCY_MEMBERSHIP stay unpolicied: they are how a request finds its tenant in the first place.

CREATE OR REPLACE FUNCTION memory_tenant_policy(
  p_schema IN VARCHAR2,
  p_object IN VARCHAR2
) RETURN VARCHAR2 AS
BEGIN
  IF SYS_CONTEXT('USERENV', 'SESSION_USER') = p_schema THEN
    RETURN NULL;
  END IF;
  RETURN 'tenant_id = TO_NUMBER(SYS_CONTEXT(''memory_ctx'', ''tenant_id''))';
END memory_tenant_policy;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'MEMORIES_SOURCEEVENT',
    policy_name     => 'MEMORIES_SOURCEEVENT_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'MEMORIES_MEMORY',
    policy_name     => 'MEMORIES_MEMORY_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'MEMORIES_MEMORYLINK',
    policy_name     => 'MEMORIES_MEMORYLINK_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'MEMORIES_ERASURE',
    policy_name     => 'MEMORIES_ERASURE_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'ASSESSMENTS_POLICYVERSION',
    policy_name     => 'ASSESSMENTS_POLICYVE_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'ASSESSMENTS_ASSESSMENT',
    policy_name     => 'ASSESSMENTS_ASSESSME_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'ASSESSMENTS_VERDICT',
    policy_name     => 'ASSESSMENTS_VERDICT_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'ASSESSMENTS_PROMOTIONCANDIDATE',
    policy_name     => 'ASSESSMENTS_PROMOTIO_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'AUDIT_TRANSITION',
    policy_name     => 'AUDIT_TRANSITION_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'AUDIT_AUDITCHAIN',
    policy_name     => 'AUDIT_AUDITCHAIN_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'CALIBRATION_LABEL',
    policy_name     => 'CALIBRATION_LABEL_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'REVIEW_CLAIM',
    policy_name     => 'REVIEW_CLAIM_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'MEMORIES_MEMORYTALLY',
    policy_name     => 'MEMORIES_MEMORYTALLY_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'AUDIT_AUDITVERIFICATION',
    policy_name     => 'AUDIT_AUDITVERIFICATION_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'MEMORIES_DUALCONTROL',
    policy_name     => 'MEMORIES_DUALCONTROL_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/

BEGIN
  DBMS_RLS.ADD_POLICY(
    object_schema   => SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'),
    object_name     => 'ASSESSMENTS_ASSESSMENTRESTART',
    policy_name     => 'ASSESSMENTS_ASSESSMENTRESTART_TNT',
    policy_function => 'memory_tenant_policy',
    statement_types => 'SELECT,INSERT,UPDATE,DELETE',
    update_check    => TRUE
  );
END;
/
