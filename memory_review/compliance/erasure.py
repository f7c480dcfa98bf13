"""The right to forget, with proof (issue 7, DESIGN §2): one transaction erases a person's
events, every memory scoped to them or written from their events, the promotion candidates that
cite either, and every copy of their words (issue 14, item 4; `blank_copies`). Rows stay, as
`deleted` or `[erased]`, with their audit trail: every memory change is a transition by
`system:erasure`, whose reason cites the erasure and never the content. The Erasure row keeps the
counts and a proof hash over the erased rows' ids and prior content hashes (never the content), for
auditors; agents' usage receipts of the person or their memories lose whom they answered; each
blanked sealed row gets an `erase` seal naming the erasure (integrity/seals.py)."""

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory_review.agents.models import Receipt
from memory_review.assessments.models import (
    CandidateStatus,
    PromotionCandidate,
)
from memory_review.audit import chain
from memory_review.audit.models import Transition
from memory_review.calibration.models import Label, ReplaySet
from memory_review.integrity import seals
from memory_review.integrity.keys import keyring
from memory_review.jobfiles import services as jobfiles
from memory_review.jobfiles.models import JobFile
from memory_review.lifecycle import Actor, LifecycleError, permits, transition
from memory_review.memories.models import Erasure, Memory, SourceEvent, content_hash
from memory_review.memories.services import ERASED, clean_scope
from memory_review.tenancy.models import Tenant

from . import personal_data

ERASER = Actor.system("erasure")


class ErasureRefused(LifecycleError):
    pass


@transaction.atomic
def erase_subject(
    *, tenant: Tenant, user_id: str, reason: str, requested_by: str, confirmed_by: str | None = None
) -> Erasure:
    """Erase everything of `user_id` in `tenant`, or nothing (one transaction)."""
    user_id = clean_scope(user_id)
    if not user_id:
        raise ErasureRefused("an erasure needs the user id whose data is to be erased")
    if not reason or not reason.strip():
        raise ErasureRefused("an erasure needs a reason (kept with its proof)")
    now = timezone.now()
    erasure = Erasure.objects.create(
        tenant=tenant,
        user_id=user_id,
        requested_by=requested_by,
        confirmed_by=confirmed_by,
        reason=reason.strip(),
    )
    with seals.erasing(erasure.pk):
        return _erase(tenant, erasure, user_id, now)


def _erase(tenant: Tenant, erasure: Erasure, user_id: str, now) -> Erasure:
    events = list(
        SourceEvent.objects.for_tenant(tenant).filter(user_id=user_id).select_for_update().order_by("pk")
    )
    memories = list(
        Memory.objects.for_tenant(tenant)
        .filter(Q(user_id=user_id) | Q(source_event__user_id=user_id))
        .order_by("pk")
    )
    candidates = list(
        PromotionCandidate.objects.for_tenant(tenant)
        .filter(
            Q(user_id=user_id) | Q(source_event__user_id=user_id) | Q(memory__in=[m.pk for m in memories])
        )
        .order_by("pk")
    )
    receipts = Receipt.objects.for_tenant(tenant).filter(
        Q(user_id=user_id) | Q(memory__in=[m.pk for m in memories]), erased_at__isnull=True
    )
    proof = [f"event:{e.pk}:{e.text_hash}" for e in events]
    proof += [f"receipt:{pk}" for pk in receipts.values_list("pk", flat=True)]
    proof += [f"memory:{m.pk}:{m.content_hash}" for m in memories]
    proof += [f"candidate:{c.pk}:{c.claim_hash}" for c in candidates]
    words = [e.text for e in events] + [m.content for m in memories] + [c.claim for c in candidates]
    fragments = quotes(words)
    if holds_quote(erasure.reason, fragments):  # its own reason, too (saved below, sealed as erase)
        erasure.reason = ERASED
    erasure.labels_cleared = blank_copies(
        tenant,
        erasure,
        fragments,
        memories=[m.pk for m in memories],
        events=[e.pk for e in events],
        candidates=[c.pk for c in candidates],
    )

    why = f"right-to-forget erasure {erasure.pk} for user {user_id}"  # never the content
    for memory in memories:
        if permits(memory, "system", "erase"):
            transition(obj=memory, action="erase", actor=ERASER, reason=why, seen_version=memory.row_version)
    Memory.objects.filter(pk__in=[m.pk for m in memories]).update(
        content=ERASED, subject=ERASED, content_hash=content_hash(ERASED), deleted_at=now
    )
    for candidate in candidates:
        if candidate.status in (CandidateStatus.PROPOSED, CandidateStatus.NEEDS_REVIEW):
            transition(
                obj=candidate, action="erase", actor=ERASER, reason=why, seen_version=candidate.row_version
            )
    PromotionCandidate.objects.filter(pk__in=[c.pk for c in candidates]).update(
        claim=ERASED, subject=ERASED, claim_hash=content_hash(ERASED)
    )
    SourceEvent.objects.filter(pk__in=[e.pk for e in events]).update(
        text=ERASED, text_hash=content_hash(ERASED), erased_at=now
    )
    _pseudonymise_scope(tenant, events=events, memories=memories, candidates=candidates)
    jobfiles.expire_files(tenant)  # an export written before now may hold their words
    # Whom the agents' responses answered, and which responses used the person's memories.
    receipts.update(response_id=ERASED, user_id=None, agent_id=None, thread_id=None, erased_at=now)
    erasure.memories_erased, erasure.events_erased, erasure.candidates_erased = (
        len(memories),
        len(events),
        len(candidates),
    )
    erasure.proof_hash = hashlib.sha256("\n".join(sorted(proof)).encode()).hexdigest()
    erasure.completed_at = now
    erasure.save()
    return erasure


def _pseudonymise_scope(tenant: Tenant, **rows) -> None:
    """The agent, thread and run ids on their events, memories and candidates, replaced by keyed
    pseudonyms (personal_data.pseudonym): the same id, the same pseudonym, so the erased rows
    keep their scope together. One sealed UPDATE per id, not per row."""
    ring = keyring()
    key = ring.key(ring.current)
    models = {"events": SourceEvent, "memories": Memory, "candidates": PromotionCandidate}
    scope = defaultdict(list)
    for model, column in personal_data.columns(personal_data.SCOPE):
        scope[model].append(column)
    for name, found in rows.items():
        model = models[name]
        for column in scope[model]:
            ids = defaultdict(list)
            for obj in found:
                if getattr(obj, column):
                    ids[getattr(obj, column)].append(obj.pk)
            for value, pks in ids.items():
                pseudonym = personal_data.pseudonym(key, tenant.pk, value)
                model.objects.filter(pk__in=pks).update(**{column: pseudonym})


# -- every copy of their words ---------------------------------------------------------------------

# A quote is a whole text of theirs, or a sentence or clause of it at least this long with at least
# two words: long enough not to match other people's ordinary phrases, short enough to catch a
# phone number or a sentence typed into a reason.
QUOTE_MIN_CHARS = 12
_CLAUSES = re.compile(r"[.!?;:,()\n]+")
# One word can be enough: an e-mail address, or a phone or account number (eight digits or more,
# however they are spaced), is theirs wherever it is written.
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}")
_IDENTIFIERS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\+?\d(?:[\d().\s-]*\d){7,}")


def quotes(texts: Iterable[str]) -> list[str]:
    """The fragments of these texts that count as quoting them, longest first."""
    texts = list(texts)
    found = set()
    for text in texts:
        if not text or text == ERASED:
            continue
        found.add(text.strip())
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
            found.add(sentence.strip())
        for clause in _CLAUSES.split(text):
            found.add(clause.strip())
    kept = {q for q in found if len(q) >= QUOTE_MIN_CHARS and len(q.split()) >= 2}
    for text in texts:
        for match in _IDENTIFIERS.finditer(text or ""):
            if not _DATE.match(match.group()):  # a date and time is no one's number
                kept.add(match.group().strip())
    return sorted(kept, key=len, reverse=True)


def quoting(column: str, fragments: list[str]) -> Q:
    """Rows whose `column` contains any of the fragments."""
    found = Q(pk__in=[])
    for fragment in fragments:
        found |= Q(**{f"{column}__contains": fragment})
    return found


# A row is asked for this many quotes at once: SQLite parses an OR of LIKEs as a tree at most 1,000
# deep (a customer with 400 events could not be erased), and a shorter OR plans better anywhere.
QUOTES_A_QUERY = 100


def shortest(fragments: list[str]) -> list[str]:
    """The fragments a text must hold one of to quote any: a text holding a longer fragment holds
    the shorter ones inside it too (a sentence, its clauses), so only those need asking for."""
    kept: list[str] = []
    for fragment in sorted(set(fragments), key=len):
        if not any(short in fragment for short in kept):
            kept.append(fragment)
    return kept


def quoting_rows(rows, column: str, fragments: list[str]) -> Q:
    """The rows of `rows` whose `column` quotes the person, found a batch of the shortest quotes at a
    time, as a condition on their ids."""
    wanted = shortest(fragments)
    found: set[int] = set()
    for start in range(0, len(wanted), QUOTES_A_QUERY):
        batch = quoting(column, wanted[start : start + QUOTES_A_QUERY])
        found.update(rows.filter(batch).values_list("pk", flat=True))
    return Q(pk__in=sorted(found))


def holds_quote(text: str | None, fragments: list[str]) -> bool:
    return bool(text) and any(fragment in text for fragment in fragments)


# Typed columns blanked by a handler of their own rather than by `_blank_typed`: the trail's text
# through its keyed hashes, label notes cleared, replay cases one by one, the admin log, a job's
# filters (JSON), and events (a quote in another customer's event is redacted as a span).
OWN_HANDLERS = {
    ("audit.Transition", "reason"), ("audit.Transition", "request_id"), ("calibration.Label", "note"),
    ("calibration.ReplaySet", "name"), ("calibration.ReplaySet", "content"),
    ("admin.LogEntry", "object_repr"), ("admin.LogEntry", "change_message"), ("jobfiles.JobFile", "params"),
}  # fmt: skip
# Their own rows: every typed column on them is blanked whole ("agent for <name>" quotes no text
# of theirs, but is theirs).
THEIR_ROWS = {"memories.Memory": "memories", "assessments.PromotionCandidate": "candidates"}


def blank_copies(
    tenant: Tenant,
    erasure: Erasure,
    fragments: list[str],
    *,
    memories: list[int],
    events: list[int],
    candidates: list[int],
) -> int:
    """Blank every copy of the person's words in `tenant`, by the rule of personal_data.COLUMNS:
    every typed column on their own rows, and every typed column anywhere that quotes them; the
    reasons and request ids of the transitions of their memories and candidates and of any
    transition quoting them (through their keyed hashes, so the chain still verifies); label notes
    on any vote that involves their event or memory or that quotes them; the descriptive text of
    imported replay cases quoting them; a job's filters; a quote of them in another customer's
    event, as a span; and the Django admin log's copies. Returns how many label notes were cleared."""
    theirs = Q(memory__in=memories) | Q(candidate__in=candidates)
    trail = Transition.objects.filter(tenant=tenant)
    transitions = trail.filter(theirs | quoting_rows(trail, "reason", fragments))
    chain.erase_text(transitions, erasure_id=erasure.pk)

    noted = Label.objects.for_tenant(tenant).filter(note__isnull=False)
    labels = noted.filter(
        Q(verdict__memory__in=memories)
        | Q(verdict__event__in=events)
        | Q(candidate__in=candidates)
        | quoting_rows(noted, "note", fragments)
    )
    cleared = labels.update(note=None)

    for model, column in personal_data.on_their_memories():
        notes = model.objects.filter(tenant=tenant, memory__in=memories)
        notes.filter(**{f"{column}__isnull": False}).update(**{column: ERASED})
    _blank_typed(tenant, fragments, own={"memories": memories, "candidates": candidates})
    _redact_quoting_events(tenant, fragments, theirs=events)

    for replay_set in ReplaySet.objects.for_tenant(tenant).only("pk", "name", "content"):
        _blank_replay_set(replay_set, fragments)  # JSON escapes text (\u20ac, \"): read each case
    for job in JobFile.objects.filter(tenant=tenant).only("pk", "params"):
        _blank_job_params(job, fragments)

    _blank_admin_log(fragments, memories=memories, events=events, candidates=candidates)
    return cleared


def _blank_typed(tenant: Tenant, fragments: list[str], *, own: dict[str, list[int]]) -> None:
    """Every typed column the rule names: whole on the person's own rows, and wherever it quotes
    them in the rest of the tenant."""
    for model, column in personal_data.columns(personal_data.TYPED):
        if (model._meta.label, column) in OWN_HANDLERS:
            continue
        mine = own.get(THEIR_ROWS.get(model._meta.label, ""), [])
        rows = model.objects.filter(tenant=tenant, **{f"{column}__isnull": False})  # sealed as erase
        rows.filter(Q(pk__in=mine) | quoting_rows(rows, column, fragments)).update(**{column: ERASED})


def _redact_quoting_events(tenant: Tenant, fragments: list[str], *, theirs: list[int]) -> None:
    """Another customer's event that quotes the person keeps its own words: only the quote is
    redacted, longest quotes first (their own events are erased whole, below)."""
    others = SourceEvent.objects.filter(tenant=tenant).exclude(pk__in=theirs)
    quoting_events = others.filter(quoting_rows(others, "text", fragments))
    for pk, text in quoting_events.values_list("pk", "text"):
        for fragment in fragments:
            text = text.replace(fragment, ERASED)
        SourceEvent.objects.filter(pk=pk).update(text=text, text_hash=content_hash(text))


def _blank_job_params(job: JobFile, fragments: list[str]) -> None:
    """A job's filters (a subject, search words) that quote them."""
    params = {
        key: ERASED if isinstance(value, str) and holds_quote(value, fragments) else value
        for key, value in (job.params or {}).items()
    }
    if params != job.params:
        JobFile.objects.filter(pk=job.pk).update(params=params)


def _blank_replay_set(replay_set: ReplaySet, fragments: list[str]) -> None:
    """Blank the descriptive text (event, memory, note) of the cases quoting the person; every
    other byte of the imported file stays as it was."""
    lines = replay_set.content.split("\n")
    changed = False
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        case = json.loads(line)  # it validated as a whole when imported (calibration/replay.py)
        quoted = [
            key for key, value in case.items() if isinstance(value, str) and holds_quote(value, fragments)
        ]
        if quoted:
            case.update(dict.fromkeys(quoted, ERASED))
            lines[n], changed = json.dumps(case, ensure_ascii=False), True
    name = ERASED if holds_quote(replay_set.name, fragments) else replay_set.name
    if changed or name != replay_set.name:
        ReplaySet.objects.filter(pk=replay_set.pk).update(content="\n".join(lines), name=name)


def _blank_admin_log(fragments: list[str], *, memories, events, candidates) -> None:
    """The Django admin log keeps an object's str() and the changed fields' names: blank both for
    the person's rows and wherever they quote them."""
    kinds = {Memory: memories, SourceEvent: events, PromotionCandidate: candidates}
    theirs = Q(pk__in=[])
    for model, pks in kinds.items():
        kind = ContentType.objects.get_for_model(model)
        theirs |= Q(content_type=kind, object_id__in=[str(pk) for pk in pks])
    quoted = theirs
    for column in ("object_repr", "change_message"):
        quoted |= quoting_rows(LogEntry.objects.all(), column, fragments)
    LogEntry.objects.filter(quoted).update(object_repr=ERASED, change_message="")
