"""Validated input (schemas.py) into the domain's write services: one path for the API and for
`import_jsonl`, so a bulk load accepts and stores exactly what the API would."""

from collections.abc import Sequence

from django.db import transaction

from memory_review.assessments import screening
from memory_review.memories import holds
from memory_review.memories.models import Memory, SourceEvent
from memory_review.memories.services import event_record, events_record, memory_write
from memory_review.tenancy.models import Tenant

from .schemas import EventIn, MemoryIn


def record_event(*, tenant: Tenant, body: EventIn) -> SourceEvent:
    return event_record(tenant=tenant, **_event_fields(body))


def record_events(*, tenant: Tenant, bodies: Sequence[EventIn]) -> list[SourceEvent]:
    """Many events in one INSERT (the batch intake), in the order given."""
    return events_record(tenant=tenant, events=[_event_fields(body) for body in bodies])


def _event_fields(body: EventIn) -> dict:
    return dict(
        source=body.source,
        text=body.text,
        run_id=body.run_id,
        occurred_at=body.occurred_at,
        **body.scope.model_dump(),
    )


def write_memory(*, event: SourceEvent, body: MemoryIn, channel: str) -> Memory:
    """`channel` says how it arrived (agent, import) in `written_by`. A memory that hides text or
    touches instructions, payment details, permissions or identity waits for a person
    (memories/holds.py) before any agent reads it as in force; so does one Jev votes an
    instruction (assessments/screening.py): asked here, before the write's transaction, for an
    agent's memory the rules pass; by a worker once it commits for an import's, or when Jev did
    not answer in time."""
    written_by = f"{channel}:{body.written_by}"
    found, rules, vote = holds.reasons(body.subject, body.content), holds.rules_of(event.tenant_id), None
    # An agent's write is not inside a transaction of its caller's (ATOMIC_REQUESTS is off), so
    # nothing is held open while Jev is asked; an import's is, and is asked by the worker.
    if channel == "agent" and not found and not holds.class_held(rules, event.source, written_by):
        vote = screening.vote_inline(event.tenant_id, body.subject, body.content, event.source)
    with transaction.atomic():
        memory = memory_write(
            event=event,
            kind=body.kind,
            subject=body.subject,
            content=body.content,
            written_by=written_by,
            confidence=body.confidence,
            valid_until=body.valid_until,
            **body.scope.model_dump(),
        )
        memory.held_because = holds.hold_if_untrusted(
            memory, found=found, rules=rules, also=[vote.reason] if vote and vote.holds else []
        )
        if vote is None and screening.needs_screening(memory):
            screening.owe(memory)
    return memory
