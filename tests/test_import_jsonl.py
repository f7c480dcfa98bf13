"""Bulk loading: all or nothing, and a bad line is named."""

import json

import pytest
from django.core.management import CommandError, call_command

from memory_review.memories.models import Memory, SourceEvent

pytestmark = pytest.mark.django_db


def write(tmp_path, rows) -> str:
    path = tmp_path / "load.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return str(path)


EVENT = {
    "type": "event",
    "key": "e1",
    "text": "Customer said deliveries go to the Paris office.",
    "source": "chat",
}
MEMORY = {
    "type": "memory",
    "event": "e1",
    "content": "Deliveries go to the Paris office.",
    "kind": "fact",
    "subject": "addr",
}


def test_it_loads_events_and_the_memories_that_cite_them(acme, tmp_path, capsys):
    path = write(tmp_path, [EVENT, MEMORY, {**MEMORY, "subject": "addr-2", "scope": {"user_id": "cust-9"}}])

    call_command("import_jsonl", path, tenant="acme")

    assert "imported 1 events and 2 memories into acme" in capsys.readouterr().out
    memory = Memory.objects.get(subject="addr-2")
    assert (memory.source_event.text, memory.user_id, memory.written_by) == (
        EVENT["text"],
        "cust-9",
        "import:agent",
    )


@pytest.mark.parametrize(
    "bad,message",
    [
        ("{not json", "line 3: not valid JSON"),
        ({"type": "fact"}, 'line 3: expected an object with "type"'),
        ({**MEMORY, "kind": "rumour"}, "line 3: kind: unknown kind 'rumour'"),
        ({**MEMORY, "event": "e9"}, "line 3: no earlier event with key 'e9'"),
        ({**EVENT, "key": "e2", "source": "fax"}, "line 3: source: unknown source 'fax'"),
        ({**MEMORY}, "line 3: memory"),  # the same subject twice in one scope
    ],
)
def test_a_bad_line_is_named_and_nothing_is_written(acme, tmp_path, bad, message):
    path = write(tmp_path, [EVENT, MEMORY, bad])

    with pytest.raises(CommandError, match=message):
        call_command("import_jsonl", path, tenant="acme")

    assert not SourceEvent.objects.exists()
    assert not Memory.objects.exists()


def test_dates_are_read_as_iso_strings_and_events_need_no_key(acme, tmp_path):
    unkeyed = {k: v for k, v in EVENT.items() if k != "key"}
    path = write(tmp_path, [unkeyed, unkeyed, {**EVENT, "occurred_at": "2026-05-01T10:00:00Z"}])

    call_command("import_jsonl", path, tenant="acme")

    assert SourceEvent.objects.count() == 3
    assert SourceEvent.objects.filter(occurred_at__year=2026, occurred_at__month=5).count() == 1
