"""How what agents read and hear looks in JSON: a memory in force, and a change in the feed or in
a webhook. The actor is given as stored (`user:3`, `policy:v2`, `agent:support-bot`) and as a
name to show."""

from memory_review.memories import hidden_text
from memory_review.memories.models import HELD, Memory, MemoryChange, MemoryStatus

from .inforce import Held


def _when(at) -> str | None:
    return at.isoformat() if at is not None else None


def scope(memory: Memory) -> dict:
    return {"user_id": memory.user_id, "agent_id": memory.agent_id, "thread_id": memory.thread_id}


def decision(memory: Memory, move, names: dict[str, str]) -> dict:
    """Who or what last decided about the memory, and when; as written, if nothing has since."""
    action, by, at = (
        ("written", memory.written_by, memory.created_at)
        if move is None
        else (move.action, move.actor, move.created_at)
    )
    return {"action": action, "by": by, "by_name": names.get(by), "at": _when(at)}


def withheld(memory: Memory) -> bool:
    """Held before it is trusted (memories/holds.py) and not yet decided by a person: agents get
    its subject and why, never its words, until a person approves or rewrites it."""
    return memory.status == MemoryStatus.NEEDS_REVIEW and memory.flagged_for == HELD


def hidden(memory: Memory) -> list[str]:
    """What the memory's subject and content hide or imitate (memories/hidden_text.py), a
    sentence a finding: an agent that shows or acts on the text can refuse it or show it openly."""
    if memory.deleted_at is not None:
        return []
    found = hidden_text.findings(memory.subject) + hidden_text.findings(memory.content)
    return hidden_text.in_words(found)


def held(item: Held, names: dict[str, str]) -> dict:
    memory = item.memory
    erased = memory.deleted_at is not None  # only an as_of answer reaches one
    return {
        "id": memory.pk,
        "version": memory.version,
        "content": None if erased or withheld(memory) else memory.content,
        "content_erased": erased,
        "content_held": withheld(memory),
        "hidden_text": hidden(memory),
        "trust": memory.trust,
        "kind": memory.kind,
        "subject": memory.subject,
        "scope": scope(memory),
        "status": item.status,
        "standing": item.standing,
        "valid_from": _when(memory.valid_from),
        "valid_until": _when(memory.valid_until),
        "latest_decision": decision(memory, item.decision, names),
    }


def change(row: MemoryChange, names: dict[str, str]) -> dict:
    """A change in the feed. A memory forgotten or erased since is a tombstone wherever it appears:
    its id, subject and scope, never its content."""
    memory, move = row.memory, row.transition
    tombstone = memory.deleted_at is not None
    out = {
        "seq": row.seq,
        "kind": row.kind,
        "at": _when(row.created_at),
        "memory_id": memory.pk,
        "version": memory.version,
        "subject": memory.subject,
        "memory_kind": memory.kind,
        "scope": scope(memory),
        "tombstone": tombstone,
        "content": None if tombstone or withheld(memory) else memory.content,
        "content_held": withheld(memory),
        "valid_from": _when(memory.valid_from),
        "valid_until": _when(memory.valid_until),
    }
    if move is None:  # as written: active
        out.update({"from_status": None, "status": MemoryStatus.ACTIVE.value, "by": memory.written_by})
        out["reason"] = None
    else:
        out.update({"from_status": move.from_status, "status": move.to_status, "by": move.actor})
        out["reason"] = move.reason
        if move.to_status == MemoryStatus.SUPERSEDED:
            out["superseded_by"] = memory.superseded_by_id
    out["by_name"] = names.get(out["by"])
    return out


def actors(items) -> set[str]:
    """The actor strings a page of memories in force or of changes names."""
    found = set()
    for item in items:
        move = item.decision if isinstance(item, Held) else item.transition
        found.add(move.actor if move is not None else item.memory.written_by)
    return found


def endpoint(row, *, secret: str | None = None) -> dict:
    """A webhook endpoint; its secret only in the answer that created it."""
    out = {
        "id": row.pk,
        "url": row.url,
        "kinds": row.kind_list or None,
        "description": row.description,
        "state": row.state,
        "created_at": _when(row.created_at),
        "created_by": row.created_by,
        "disabled_at": _when(row.disabled_at),
        "disabled_reason": row.disabled_reason or None,
        "failures_in_a_row": row.failure_streak,
    }
    if hasattr(row, "waiting"):
        out.update({"waiting": row.waiting, "given_up": row.given_up})
    if secret is not None:
        out["secret"] = secret
    return out


def delivery(row) -> dict:
    """One delivery in an endpoint's log, with each try: a change's (its position and memory) or a
    notice's (its id)."""
    change = row.change
    return {
        "id": row.pk,
        "webhook_id": row.msg_id,
        "change_seq": change.seq if change else None,
        "kind": change.kind if change else row.notice.kind,
        "memory_id": change.memory_id if change else None,
        "notice_id": row.notice_id,
        "state": row.state,
        "attempts": row.attempts,
        "next_attempt_at": _when(row.next_attempt_at) if row.state == "pending" else None,
        "delivered_at": _when(row.delivered_at),
        "tries": [
            {
                "number": t.number,
                "at": _when(t.started_at),
                "code": t.code,
                "latency_ms": t.latency_ms,
                "error": t.error or None,
                "finished": t.latency_ms is not None,
            }
            for t in row.tries.all()
        ],
    }
