"""Bulk-load events and memories from JSONL. Every line is checked before anything is written;
a bad line is an error that names it, and then nothing is written at all.

One object per line, with a "type":
  {"type": "event", "key": "e1", "text": "...", "source": "chat", "scope": {"user_id": "cust-1"}}
  {"type": "memory", "event": "e1", "content": "...", "kind": "fact", "subject": "..."}
A memory names the event it came from by that event's `key` in the same file, or by an existing
event's id with "source_event_id". The fields are those of the agents' API (see /api/v1/openapi.json).
"""

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from pydantic import ValidationError

from memory_review.api.intake import record_event, write_memory
from memory_review.api.schemas import EventIn, MemoryIn, error_fields
from memory_review.assessments.invalidation import observe_event
from memory_review.integrity.db_context import tenant_context
from memory_review.lifecycle import LifecycleError
from memory_review.memories.models import SourceEvent
from memory_review.params import Unreadable, json_loads
from memory_review.tenancy.models import Tenant


class Command(BaseCommand):
    help = "Bulk-load events and memories for a tenant from a JSONL file (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--tenant", required=True, metavar="SLUG")
        parser.add_argument("--observe", action="store_true", help="queue an invalidation for each event")

    def handle(self, *args, file, tenant, observe, **options):
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise CommandError(f"no tenant with slug {tenant!r}")
        rows = self._parse(file)
        try:
            with tenant_context(found.pk), transaction.atomic():
                events, memories = self._write(found, rows, observe=observe)
        except (LifecycleError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"imported {events} events and {memories} memories into {tenant}")

    def _parse(self, path: str) -> list[tuple[int, str, object, str | None]]:
        rows, keys = [], set()
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path} line {number}"
            try:
                data = json_loads(line)
            except Unreadable as exc:
                raise CommandError(f"{where}: not valid JSON ({exc})") from exc
            except json.JSONDecodeError as exc:
                raise CommandError(f"{where}: not valid JSON ({exc.msg})") from exc
            if not isinstance(data, dict) or data.get("type") not in ("event", "memory"):
                raise CommandError(f'{where}: expected an object with "type": "event" or "memory"')
            kind, ref = data.pop("type"), None
            if kind == "event":
                ref = data.pop("key", None)
                if ref is not None and not isinstance(ref, str):
                    raise CommandError(f"{where}: key must be a string")
                if ref is not None and ref in keys:
                    raise CommandError(f"{where}: event key {ref!r} used twice")
                keys.add(ref)
                model = EventIn
            else:
                ref = data.pop("event", None)
                if ref is not None and not isinstance(ref, str):
                    raise CommandError(f"{where}: event must be the string key of an earlier event")
                if ref is not None:
                    if ref not in keys:
                        raise CommandError(f"{where}: no earlier event with key {ref!r}")
                    data.setdefault("source_event_id", 0)  # resolved to the new event at write time
                model = MemoryIn
            try:
                # JSON mode, as the API reads it: dates arrive as ISO strings.
                body = model.model_validate_json(json.dumps(data))
            except ValidationError as exc:
                problems = "; ".join(f"{field}: {message}" for field, message in error_fields(exc).items())
                raise CommandError(f"{where}: {problems}") from exc
            if getattr(body, "receipts", None):
                raise CommandError(f"{where}: receipts are not imported; agents send them to the API")
            rows.append((number, kind, body, ref))
        return rows

    def _write(self, tenant: Tenant, rows, *, observe: bool) -> tuple[int, int]:
        by_key: dict[str, SourceEvent] = {}
        events = memories = 0
        for number, kind, body, ref in rows:
            if kind == "event":
                event = record_event(tenant=tenant, body=body)
                if ref is not None:
                    by_key[ref] = event
                if observe:
                    observe_event(event=event, remember_successor=body.remember_successor, recorded_now=True)
                events += 1
                continue
            event = (
                by_key.get(ref)
                or SourceEvent.objects.for_tenant(tenant).filter(pk=body.source_event_id).first()
            )
            if event is None:
                raise ValueError(
                    f"line {number}: source_event_id {body.source_event_id} is not an event of {tenant}"
                )
            try:
                write_memory(event=event, body=body, channel="import")
            except LifecycleError as exc:
                raise LifecycleError(f"line {number}: {exc}") from exc
            memories += 1
        return events, memories
