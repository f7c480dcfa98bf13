"""What the application's database user may do, table by table (least privilege, DESIGN §6, §8).

The web and worker processes connect as a user that owns nothing (MEMORY_APP on Oracle, any
role on PostgreSQL): row-level security binds it, and these grants bound it further. What the
code never does, the user cannot do: no DELETE anywhere tenant data lives, the append-only
tables (audit transitions, verdicts, restarts, verifications) take INSERT only, a verdict's one
later write (`applied`), a source event's erasure, the line a verification's checkpoint job wrote
and the chain head's move are column grants,
and Django's migration table is not reachable at all.

One map serves both databases: sql/oracle/050_grants.sql is rendered from it (a test fails when
it is stale), and `manage.py grant_app_role ROLE` applies it on PostgreSQL. Every table in the
schema must be in the map: a test fails naming a table a migration added without a decision.
"""

from dataclasses import dataclass

from django.db import connection


@dataclass(frozen=True)
class Grant:
    privileges: tuple[str, ...] = ()
    update_columns: tuple[str, ...] = ()  # UPDATE of these columns only
    why: str = ""

    def statements(self, table: str, grantee: str, *, quote) -> list[str]:
        out = []
        if self.privileges:
            out.append(f"GRANT {', '.join(self.privileges)} ON {quote(table)} TO {grantee}")
        if self.update_columns:
            columns = ", ".join(quote(column) for column in self.update_columns)
            out.append(f"GRANT UPDATE ({columns}) ON {quote(table)} TO {grantee}")
        return out


READ = ("SELECT",)
APPEND = ("SELECT", "INSERT")
WRITE = ("SELECT", "INSERT", "UPDATE")
MANAGE = ("SELECT", "INSERT", "UPDATE", "DELETE")

APP_GRANTS: dict[str, Grant] = {
    # Django's own tables.
    "django_migrations": Grant(why="migrations run as the owner; the app never reads or writes them"),
    "django_content_type": Grant(READ, why="the admin and permissions read it; migrate writes it"),
    "auth_permission": Grant(READ, why="written by migrate"),
    "auth_group": Grant(MANAGE, why="admins manage groups in the admin site"),
    "auth_group_permissions": Grant(("SELECT", "INSERT", "DELETE")),
    "auth_user": Grant(
        WRITE, why="people are deactivated, never deleted: their names stay on the audit trail"
    ),
    "auth_user_groups": Grant(("SELECT", "INSERT", "DELETE")),
    "auth_user_user_permissions": Grant(("SELECT", "INSERT", "DELETE")),
    "django_admin_log": Grant(
        APPEND,
        update_columns=("object_repr", "change_message"),
        why="an erasure blanks its copies of a person's words",
    ),
    "django_session": Grant(MANAGE, why="logging out and expiry delete sessions"),
    # Login throttling (django-axes): a reset deletes the attempts.
    "axes_accessattempt": Grant(MANAGE),
    "axes_accessattemptexpiration": Grant(MANAGE),
    "axes_accessfailurelog": Grant(MANAGE),
    "axes_accesslog": Grant(MANAGE),
    # Tenancy.
    "tenancy_tenant": Grant(WRITE, why="admins add tenants and change their settings; none is deleted"),
    "tenancy_membership": Grant(MANAGE, why="removing someone from a tenant deletes their membership"),
    "tenancy_apitoken": Grant(WRITE, why="revoked, never deleted: who held which token stays known"),
    # The domain.
    "memories_sourceevent": Grant(
        APPEND,
        update_columns=("text", "text_hash", "erased_at", "agent_id", "thread_id", "run_id"),
        why="events are evidence: only a right-to-forget erasure blanks one (or a quote in one), and "
        "gives its scope ids keyed pseudonyms",
    ),
    "memories_memory": Grant(WRITE, why="forgetting is a status, not a DELETE"),
    "memories_memorytally": Grant(WRITE),
    "memories_memorylink": Grant(APPEND),
    "memories_memorychange": Grant(
        APPEND,
        update_columns=("seq",),
        why="the agents' change feed: a change served never changes; the sequencer gives its position",
    ),
    "memories_erasure": Grant(WRITE),
    "agents_receipt": Grant(
        APPEND,
        update_columns=("response_id", "user_id", "agent_id", "thread_id", "erased_at"),
        why="an erasure blanks whom a response answered; a receipt is never edited otherwise",
    ),
    "agents_webhookendpoint": Grant(WRITE, why="endpoints are disabled or removed, never deleted"),
    "agents_webhookdelivery": Grant(WRITE, why="a delivery's state moves; the row stays as the log"),
    "agents_webhookattempt": Grant(WRITE, why="a try is written as it starts and completed when it ends"),
    "agents_notice": Grant(APPEND, why="a notice to the agents is written once, sealed, and never changed"),
    "memories_dualcontrol": Grant(WRITE),
    "assessments_policyversion": Grant(WRITE, why="a policy is retired, never deleted"),
    "assessments_assessment": Grant(WRITE),
    "assessments_assessmentrestart": Grant(
        APPEND, update_columns=("reason", "previous_error"), why="an erasure blanks text quoting a person"
    ),
    "assessments_verdict": Grant(APPEND, update_columns=("applied",), why="votes are never rewritten"),
    "assessments_promotioncandidate": Grant(WRITE),
    "assessments_screeningowed": Grant(WRITE, why="marked screened, never deleted"),
    "calibration_label": Grant(
        APPEND,
        update_columns=("withdrawn_at", "note"),
        why="a label is never rewritten: undo withdraws it, and erasure blanks its note",
    ),
    "calibration_policyproposal": Grant(WRITE, why="proposals are decided, never deleted"),
    "calibration_replayset": Grant(
        APPEND,
        update_columns=("name", "content"),
        why="an imported set is kept verbatim, but for the text of cases an erasure blanks",
    ),
    "review_claim": Grant(WRITE, why="claims are released, and kept as the record"),
    "jobfiles_jobfile": Grant(WRITE, why="a job's state moves; the record stays when its file expires"),
    "quality_auditsample": Grant(APPEND, why="a sampled audit's draw is written once and sealed"),
    "quality_audititem": Grant(APPEND, why="the items drawn are written once, with their sample"),
    "quality_auditplan": Grant(WRITE, why="one row a tenant, changed in place by a lead"),
    "memories_trustrules": Grant(WRITE, why="one row a tenant, changed in place by a lead"),
    "quality_gatechange": Grant(APPEND, why="the gate's history: a change is a new row"),
    "quality_auditlabel": Grant(
        APPEND, update_columns=("withdrawn_at", "note"), why="undo withdraws a label; erasure blanks a note"
    ),
    "workflow_assignment": Grant(WRITE, why="an assignment is ended, never deleted"),
    "workflow_assignmentrule": Grant(WRITE, why="a rule is removed by a date, and kept"),
    "workflow_reviewtarget": Grant(WRITE, why="one row a tenant, changed in place by a lead"),
    # The audit trail.
    "audit_transition": Grant(
        APPEND,
        update_columns=("reason", "request_id", "erased_by", "seq", "prev_hash", "hash"),
        why="append-only (a trigger refuses UPDATE and DELETE too, but an erasure blanking the text "
        "and the sequencer giving a waiting row its position, once)",
    ),
    "audit_seal": Grant(
        APPEND,
        update_columns=("seq", "prev_hash", "trail_seq", "hash"),
        why="the seals' ledger is append-only (a trigger refuses UPDATE and DELETE, but the sequencer "
        "giving a waiting seal its position, once)",
    ),
    "audit_auditchain": Grant(
        ("SELECT", "INSERT"), update_columns=("seq", "head_hash", "seal_seq", "seal_hash")
    ),
    "audit_auditverification": Grant(
        APPEND,
        update_columns=("checkpoint_lines", "checkpoint_line_hash"),
        why="a verification is never rewritten, but for the checkpoint line its job has just written "
        "(sealed again as it is recorded)",
    ),
    "audit_verificationrun": Grant(WRITE, why="a run's progress moves; the record stays"),
}

# Tenant tables without a row-level policy, each with its reason (DESIGN §6).
UNPOLICIED = {
    "tenancy_membership": "how a signed-in person's request finds its tenant, before any tenant is set; "
    "it holds a role, no tenant content, and every query on it is filtered by user in code",
    "tenancy_apitoken": "how an agent's request finds its tenant from the token, before any tenant is "
    "set; it holds a hash and a name, no tenant content",
}


def unmapped(tables: list[str]) -> list[str]:
    return sorted(table for table in tables if table not in APP_GRANTS)


def postgres_statements(role: str) -> list[str]:
    """Idempotent: everything taken back, then exactly the map given (and sequence use to insert)."""
    quote = connection.ops.quote_name
    out = [
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {quote(role)}",
        f"GRANT USAGE ON SCHEMA public TO {quote(role)}",
    ]
    for table, grant in sorted(APP_GRANTS.items()):
        out.extend(grant.statements(table, quote(role), quote=quote))
    out.append(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {quote(role)}")
    return out
