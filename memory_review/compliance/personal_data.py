"""Where a person's words can be, column by column (issue 27, item 5): the rule an erasure follows.

Every text and JSON column of the product's tables (and the Django admin's log) is declared here
as one of:

* `WORDS`: the person's own words on their own rows (their events, the memories scoped to them or
  written from their events, the candidates citing either): erased with those rows;
* `SCOPE`: a scope id (agent, thread, run) on their rows: pseudonymised by a keyed hash on their
  events, memories and candidates, so those still fall in one scope as before and no reader
  learns the id (`pseudonym`), and nulled on their receipts, which answer no scope read;
* `TYPED`: free text people or agents type anywhere in the tenant (reasons, notes, names of
  tokens and endpoints, an agent's "agent for <name>", a rule's subject words, a job's filters,
  another customer's event): blanked where it quotes the person (an event's text as a span);
* `NONE`: holds no personal data, with the reason (hashes, codes, statuses, actor ids, our own
  messages).

tests/test_personal_data_rule.py fails when a text or JSON column is added without being
declared here, so erasure reaches a new copy by rule, not by someone remembering a list.
"""

import hashlib
import hmac
from enum import Enum

from django.apps import apps
from django.db import models


class Holds(Enum):
    WORDS = "the person's own words, erased with their rows"
    SCOPE = "a scope id on their rows, pseudonymised (or nulled on receipts)"
    TYPED = "typed text, blanked where it quotes them"
    NONE = "no personal data"


WORDS, SCOPE, TYPED, NONE = Holds.WORDS, Holds.SCOPE, Holds.TYPED, Holds.NONE
HASH = (NONE, "a hash")
ACTOR = (NONE, "who acted: user:<id>, token:<prefix>, system:<job>")
CODE = (NONE, "a code of ours: a status, kind, action or state")
OURS = (NONE, "a message of ours (an error or finding naming ids and causes, never the words)")

COLUMNS: dict[str, dict[str, tuple[Holds, str]]] = {
    "tenancy.Tenant": {"slug": (NONE, "the tenant's own name"), "name": (NONE, "the tenant's own name")},
    "tenancy.ApiToken": {
        "name": (TYPED, "an admin names a token, perhaps after a customer"),
        "prefix": HASH,
        "token_hash": HASH,
        "revoked_by": ACTOR,
    },
    "memories.SourceEvent": {
        "user_id": (NONE, "the erasure's own key, kept on its rows as the request names it"),
        "agent_id": (SCOPE, ""),
        "thread_id": (SCOPE, ""),
        "run_id": (SCOPE, ""),
        "text": (WORDS, "theirs erased whole; another customer's quoting them, as a span"),
        "text_hash": HASH,
    },
    "memories.Memory": {
        "user_id": (NONE, "the erasure's own key, kept on its rows as the request names it"),
        "agent_id": (SCOPE, ""),
        "thread_id": (SCOPE, ""),
        "subject": (WORDS, ""),
        "content": (WORDS, ""),
        "content_hash": HASH,
        "written_by": (TYPED, "an agent may write 'agent for <name>'"),
        "flagged_for": CODE,
        "trust": CODE,
    },
    "memories.Erasure": {
        "user_id": (NONE, "the erasure's own key: what was asked to be erased"),
        "requested_by": ACTOR,
        "reason": (TYPED, "why, as typed"),
        "confirmed_by": ACTOR,
        "proof_hash": HASH,
    },
    "memories.DualControl": {
        "user_id": (NONE, "the erasure asked for: its key"),
        "reason": (TYPED, "why, as typed"),
        "outcome": CODE,
        "change": (NONE, "a setting's value or a member's role, by ids"),
    },
    "assessments.PolicyVersion": {
        "note": (TYPED, "a note, as typed"),
        "created_by": ACTOR,
        "thresholds": (NONE, "numbers"),
    },
    "assessments.Assessment": {
        "model_name": CODE,
        "question_set_version": CODE,
        "error": (TYPED, "an error may quote what was sent"),
        "reason": (TYPED, "why it ran, as typed"),
        "targets": (NONE, "memory ids"),
    },
    "assessments.AssessmentRestart": {
        "actor": ACTOR,
        "reason": (TYPED, "why, as typed"),
        "previous_state": CODE,
        "previous_error": (TYPED, "an error may quote what was sent"),
    },
    "assessments.Verdict": {"proposed_status": CODE},
    "assessments.ScreeningOwed": {"last_error": (TYPED, "an error may quote what was sent")},
    "assessments.PromotionCandidate": {
        "user_id": (NONE, "the erasure's own key, kept on its rows as the request names it"),
        "agent_id": (SCOPE, ""),
        "thread_id": (SCOPE, ""),
        "subject": (WORDS, ""),
        "claim": (WORDS, ""),
        "claim_hash": HASH,
        "source_hash": HASH,
        "proposed_by": (TYPED, "an agent may write 'agent for <name>'"),
        "check_failed": OURS,
        "reviewed_by": ACTOR,
    },
    "audit.Transition": {
        "from_status": CODE,
        "to_status": CODE,
        "action": CODE,
        "actor": ACTOR,
        "reason": (TYPED, "blanked through its keyed hash (chain.erase_text)"),
        "reason_mac": HASH,
        "request_id": (TYPED, "blanked through its keyed hash (chain.erase_text)"),
        "request_id_mac": HASH,
        "content_hash": HASH,
        "prev_hash": HASH,
        "hash": HASH,
        "key_id": CODE,
        "leaf": HASH,
    },
    "audit.Seal": {
        "kind": CODE,
        "digest": HASH,
        "members": (NONE, "a group's row ids and their digests"),
        "actor": ACTOR,
        "prev_hash": HASH,
        "key_id": CODE,
        "hash": HASH,
        "leaf": HASH,
    },
    "audit.AuditChain": {"head_hash": HASH, "seal_hash": HASH},
    "audit.AuditVerification": {"problem": OURS, "checkpoint_line_hash": HASH, "by": ACTOR},
    "audit.VerificationRun": {"requested_by": ACTOR, "stage": CODE, "error": OURS},
    "calibration.Label": {
        "outcome": CODE,
        "note": (TYPED, "a labeler's note, cleared (not blanked) where it quotes them"),
        "alternatives": (NONE, "outcome codes"),
    },
    "calibration.PolicyProposal": {
        "reason": (TYPED, "why, as typed"),
        "decision_note": (TYPED, "a note, as typed"),
        "thresholds": (NONE, "numbers"),
        "evidence": (NONE, "label counts, metrics and a sweep: numbers"),
    },
    "calibration.ReplaySet": {
        "name": (TYPED, "a file's name, as typed"),
        "content": (TYPED, "imported cases: their descriptive text blanked case by case"),
    },
    "workflow.Claim": {"release_note": (TYPED, "a note, as typed")},
    "workflow.AssignmentRule": {"subject_contains": (TYPED, "a lead's subject words, perhaps a name")},
    "agents.Receipt": {
        "response_id": (NONE, "the agent's response id: set to [erased] on theirs"),
        "user_id": (NONE, "nulled on theirs, as the receipt answered them"),
        "agent_id": (SCOPE, ""),
        "thread_id": (SCOPE, ""),
    },
    "agents.WebhookEndpoint": {
        "url": (NONE, "where an agent listens"),
        "kinds": CODE,
        "description": (TYPED, "an admin's description, as typed"),
        "secret": HASH,
        "created_by": ACTOR,
        "disabled_by": ACTOR,
        "disabled_reason": (TYPED, "why, as typed (or ours)"),
        "removed_by": ACTOR,
    },
    "agents.WebhookDelivery": {"msg_id": CODE, "last_error": OURS},
    "agents.Notice": {
        "kind": CODE,
        "key": (NONE, "a population and a sample's id"),
        "data": (
            NONE,
            "population-level figures, our sentence, and the worst stratum's agent id, channel and kind",
        ),
    },
    "agents.WebhookAttempt": {"error": OURS},
    "jobfiles.JobFile": {
        "kind": CODE,
        "filename": (NONE, "the export's name, from its kind and time"),
        "requested_by": ACTOR,
        "error": OURS,
        "sha256": HASH,
        "path": (NONE, "its name in the storage"),
        "params": (TYPED, "the filters asked for: a subject or search words"),
    },
    "quality.AuditSample": {
        "seed": (NONE, "random hex"),
        "strata": (NONE, "each stratum's agent id, channel, kind and decision, and counts"),
        "drawn_by": ACTOR,
    },
    "quality.AuditItem": {"rank": HASH},
    "quality.AuditPlan": {"changed_by": ACTOR},
    "memories.TrustRules": {"hold_classes": CODE, "changed_by": ACTOR},
    "quality.GateChange": {
        "agent": (NONE, "an agent's name"),
        "channel": CODE,
        "kind": CODE,
        "decision": CODE,
        "changed_by": ACTOR,
    },  # fmt: skip
    "quality.AuditLabel": {"note": (TYPED, "a labeler's note, blanked where it quotes them")},
    "admin.LogEntry": {
        "object_id": (NONE, "a row's id"),
        "object_repr": (TYPED, "an object's str(), blanked for their rows and where it quotes them"),
        "change_message": (TYPED, "the changed fields' names, blanked with it"),
    },
}

PROJECT = "memory_review"


def text_columns() -> list[tuple[str, str]]:
    """(model label, column) of every text and JSON column the rule must declare."""
    found = []
    for model in apps.get_models():
        if not (model.__module__.startswith(PROJECT) or model._meta.label == "admin.LogEntry"):
            continue
        for field in model._meta.concrete_fields:
            if (
                isinstance(field, models.CharField | models.TextField | models.JSONField)
                and not field.choices
            ):
                found.append((model._meta.label, field.name))
    return found


def columns(holds: Holds) -> list[tuple[type[models.Model], str]]:
    """The models and columns declared as holding this."""
    return [
        (apps.get_model(label), column)
        for label, declared in COLUMNS.items()
        for column, (kind, _) in declared.items()
        if kind is holds
    ]


# Notes typed about one memory, on rows that hang off it: on the person's own memories they are
# blanked whole, whatever they say (a claim's release note, a request to forget and its reason).
ON_THEIR_MEMORIES = {"workflow.Claim": "release_note", "memories.DualControl": "reason"}


def on_their_memories() -> list[tuple[type[models.Model], str]]:
    """The models and columns of ON_THEIR_MEMORIES; each row names its memory as `memory`."""
    return [(apps.get_model(label), column) for label, column in ON_THEIR_MEMORIES.items()]


def pseudonym(key: bytes, tenant_id: int, value: str | None) -> str | None:
    """A scope id replaced by its keyed hash: the same id gives the same pseudonym in a tenant (so
    erased rows keep their scope together), and no one without the key can tell whose it was."""
    if not value:
        return value
    mac = hmac.new(key, f"{tenant_id}:{value}".encode(), hashlib.sha256).hexdigest()
    return f"erased-{mac[:16]}"
