"""Observe an event: which memories it touches, what Jev votes, what the policy does (DESIGN §4).

The order matters: every verdict of an event is written (and committed) before any status
changes, so a crash leaves a complete record and a redelivered task only finishes the applying.
"""

import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory_review.lifecycle import Actor, LifecycleError, transition
from memory_review.memories.models import Memory, MemoryStatus, SourceEvent
from memory_review.memories.services import memory_write

from . import questions as q
from .jev import Jev, JevError, JevReply, cost_usd, get_jev, noul
from .models import Assessment, Disposition, PolicyVersion, Verdict
from .policy import BEARING, POLICY_ACTIONS, PROPOSED_STATUS, Thresholds, decide

logger = logging.getLogger(__name__)

JUDGED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.NEEDS_REVIEW, MemoryStatus.FROZEN)
JUDGED_FIELDS = (
    "tenant_id", "content", "kind", "status", "valid_until", "row_version",
    "source_event__source", "source_event__erased_at",
)  # fmt: skip


# -- choosing what to judge ----------------------------------------------------------------------


def candidates_for(event: SourceEvent):
    """Live memories the event can bear on: same tenant, and in its scope. A memory with a NULL
    scope column applies to everyone below it; an event with a NULL column speaks for everyone
    below it, so it reaches narrower memories too."""
    in_scope = Q()
    for column in ("user_id", "agent_id", "thread_id"):
        value = getattr(event, column)
        if value is not None:
            in_scope &= Q(**{f"{column}__isnull": True}) | Q(**{column: value})
    memories = Memory.objects.for_tenant(event.tenant).filter(
        in_scope, status__in=JUDGED_STATUSES, deleted_at__isnull=True
    )
    # Only what judging reads: a large pool's rows are read on every event.
    return (
        memories.exclude(source_event=event)
        .select_related("source_event")
        .only(*JUDGED_FIELDS)
        .order_by("pk")
    )


def code_checks(memories: Sequence[Memory], now) -> tuple[dict[int, str], list[Memory]]:
    """What code settles without asking: hard TTL passed, or the source was erased."""
    settled, rest = {}, []
    for memory in memories:
        if memory.status == MemoryStatus.ACTIVE and memory.is_expired(now):
            settled[memory.pk] = Disposition.EXPIRED
        elif memory.source_event.erased_at is not None:
            settled[memory.pk] = Disposition.NO_SOURCE
        else:
            rest.append(memory)
    return settled, rest


# -- asking Jev ----------------------------------------------------------------------------------


def tokens(value) -> int:
    """A deliberately generous estimate (about four characters a token), never an undercount
    that would push a request past Jev's budget."""
    return len(json.dumps(value, ensure_ascii=False)) // 3 + 1


def _fact(memory: Memory) -> dict:
    return {"fact": memory.content, "kind": memory.kind, "source": memory.source_event.source}


def _fact_tokens(memory: Memory) -> int:
    """`tokens(_fact(memory))` without serialising each of a large pool's memories; the 60
    characters cover the keys, the kind and the source channel."""
    return (len(memory.content) + 60) // 3 + 1


def _event_state(event: SourceEvent) -> dict:
    return {"text": event.text, "source": event.source}


def _questions(templates: Sequence[q.Question], i: int | None = None) -> dict:
    out = {}
    for template in templates:
        qid = template.id.format(i=i)
        out[qid] = noul(qid, template.instructions.format(i=i), template.yes, template.no)
    return out


def _question_tokens(templates: Sequence[q.Question]) -> int:
    return sum(tokens([t.instructions, t.yes, t.no]) for t in templates)


def pack(event: SourceEvent, memories: Sequence[Memory], *, per_memory, limit: int) -> list[list[Memory]]:
    """Batches of at most `limit` memories that fit Jev's budgets: the state plus the longest
    question within JEV_STATE_TOKENS, the whole request within JEV_REQUEST_TOKENS. A long event
    or long memories make batches smaller, never a failed request."""
    base = tokens(_event_state(event))
    longest = max(_question_tokens([t]) for t in per_memory)
    per_memory_cost = _question_tokens(per_memory)
    batches: list[list[Memory]] = [[]]
    state = request = base
    for memory in memories:
        size = _fact_tokens(memory)
        batch = batches[-1]
        fits = (
            len(batch) < limit
            and state + size + longest <= settings.JEV_STATE_TOKENS
            and request + size + per_memory_cost <= settings.JEV_REQUEST_TOKENS
        )
        if batch and not fits:
            batches.append([])
            state = request = base
        batches[-1].append(memory)
        state += size
        request += size + per_memory_cost
    return [batch for batch in batches if batch]


@dataclass
class Usage:
    requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    model: str | None = None
    standin: bool = False
    failure: JevError | None = None

    def add(self, reply: JevReply) -> None:
        self.requests += 1
        self.retries += reply.tries - 1
        self.input_tokens += reply.input_tokens
        self.model = reply.model
        self.standin = self.standin or reply.standin


def ask_all(jev: Jev, requests: list[tuple[dict, dict]], usage: Usage) -> list[dict[str, float]]:
    """Send the requests concurrently (the client caps concurrency and rate per process)."""
    with ThreadPoolExecutor(max_workers=max(1, min(len(requests), settings.JEV_MAX_CONCURRENCY))) as pool:
        futures = [pool.submit(jev.ask, state, questions) for state, questions in requests]
    votes = []
    for future in futures:
        try:
            reply = future.result()
        except JevError as exc:
            usage.requests += 1
            usage.retries += exc.tries - 1
            usage.failure = usage.failure or exc
            continue
        usage.add(reply)
        votes.append(reply.votes)
    if usage.failure:
        raise usage.failure
    return votes


def _request(
    event: SourceEvent, batch: Sequence[Memory], templates: Sequence[q.Question]
) -> tuple[dict, dict]:
    questions = {}
    for i in range(len(batch)):
        questions.update(_questions(templates, i))
    return {"event": _event_state(event), "memories": [_fact(m) for m in batch]}, questions


class Gathering:
    """All of one event's requests, in flight together.

    The event-level questions go in a request of their own at once. Below the screening
    threshold the judgment batches go out beside it; above it, each screening answer sends off
    the judgment of the memories it kept as soon as it arrives, so the second round trip
    overlaps the tail of the first. The client caps concurrency and rate per process.
    """

    def __init__(self, jev: Jev, event: SourceEvent, policy: Thresholds, usage: Usage):
        self.jev, self.event, self.policy, self.usage = jev, event, policy, usage
        self.pending: dict[Future, tuple[str, Sequence[Memory]]] = {}
        self.event_votes: dict[str, float] = {}
        self.votes: dict[int, dict[str, float]] = {}
        self.screened_out = 0

    def run(self, memories: list[Memory]) -> dict[int, dict[str, float]]:
        if not memories:
            return {}
        workers = max(1, settings.JEV_MAX_CONCURRENCY)
        with ThreadPoolExecutor(max_workers=workers) as self.pool:
            self._send("event", [], {"event": _event_state(self.event)}, _questions(q.EVENT_QUESTIONS))
            if len(memories) > settings.JEV_SCREEN_ABOVE:
                for batch in pack(
                    self.event, memories, per_memory=[q.SCREEN_QUESTION], limit=settings.JEV_SCREEN_BATCH_SIZE
                ):
                    self._send("screen", batch, *_request(self.event, batch, [q.SCREEN_QUESTION]))
            else:
                self._judge(memories)
            while self.pending:
                done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
                for future in done:
                    self._receive(future, *self.pending.pop(future))
        if self.usage.failure:
            raise self.usage.failure
        return {pk: {**self.event_votes, **votes} for pk, votes in self.votes.items()}

    def _send(self, kind: str, batch: Sequence[Memory], state: dict, questions: dict) -> None:
        self.pending[self.pool.submit(self.jev.ask, state, questions)] = (kind, batch)

    def _judge(self, memories: Sequence[Memory]) -> None:
        for batch in pack(self.event, memories, per_memory=q.MEMORY_QUESTIONS, limit=settings.JEV_BATCH_SIZE):
            self._send("judge", batch, *_request(self.event, batch, q.MEMORY_QUESTIONS))

    def _receive(self, future: Future, kind: str, batch: Sequence[Memory]) -> None:
        try:
            reply = future.result()
        except JevError as exc:
            self.usage.requests += 1
            self.usage.retries += exc.tries - 1
            self.usage.failure = self.usage.failure or exc
            for other in self.pending:
                other.cancel()  # no point asking more: the assessment has failed
            return
        except CancelledError:
            return
        self.usage.add(reply)
        if self.usage.failure:
            return
        if kind == "event":
            self.event_votes = reply.votes
        elif kind == "screen":
            kept = [m for i, m in enumerate(batch) if reply.votes[f"screen_{i}"] >= self.policy.screen_min]
            self.screened_out += len(batch) - len(kept)
            if kept:
                self._judge(kept)
        else:
            for i, memory in enumerate(batch):
                self.votes[memory.pk] = {
                    name: reply.votes[f"{name}_{i}"]
                    for name in ("bears", "still_true", "replaces", "partial")
                }


# -- the pipeline --------------------------------------------------------------------------------


def active_policy(tenant) -> PolicyVersion:
    policy = PolicyVersion.objects.for_tenant(tenant).filter(mode=PolicyVersion.Mode.ACTIVE).first()
    if policy is None:
        raise LifecycleError(f"tenant {tenant.slug} has no active policy version")
    return policy


def shadow_policy(tenant) -> PolicyVersion | None:
    return PolicyVersion.objects.for_tenant(tenant).filter(mode=PolicyVersion.Mode.SHADOW).first()


def observe_event(
    *,
    event: SourceEvent,
    remember_successor: bool = False,
    enqueue: Callable[[Assessment], None] | None = None,
) -> Assessment:
    """The invalidation assessment of `event` (one per event), queued for a worker on commit."""
    assessment, created = Assessment.objects.get_or_create(
        tenant_id=event.tenant_id,
        event=event,
        purpose=Assessment.Purpose.INVALIDATION,
        defaults={
            "policy": active_policy(event.tenant),
            "question_set_version": q.INVALIDATION_VERSION,
            "remember_successor": remember_successor,
        },
    )
    if created:
        if enqueue is None:
            from .tasks import enqueue_assessment as enqueue
        transaction.on_commit(lambda: enqueue(assessment))
    return assessment


def run_invalidation(assessment_id: int, *, jev: Jev | None = None) -> Assessment:
    """Judge, record, then apply. Safe to run twice, or in two workers at once: the assessment
    row is locked while votes are gathered, and each verdict is applied at most once."""
    with transaction.atomic():
        assessment = Assessment.objects.select_for_update().get(pk=assessment_id)
        if assessment.state in (Assessment.State.DONE, Assessment.State.FAILED):
            return assessment
        if not assessment.verdicts.exists():
            _judge_and_record(assessment, jev or get_jev())
            if assessment.state == Assessment.State.FAILED:
                return assessment
    apply_verdicts(assessment)
    Assessment.objects.filter(pk=assessment.pk).update(
        state=Assessment.State.DONE, finished_at=timezone.now()
    )
    assessment.refresh_from_db()
    return assessment


def _judge_and_record(assessment: Assessment, jev: Jev) -> None:
    event = SourceEvent.objects.get(pk=assessment.event_id)
    policy = Thresholds.from_data(assessment.policy.thresholds)
    shadow = shadow_policy(event.tenant)
    now = timezone.now()
    memories = list(candidates_for(event))
    settled, to_judge = code_checks(memories, now)
    usage = Usage()
    started = time.monotonic()
    assessment.state = Assessment.State.RUNNING
    assessment.candidates_total = len(memories)
    gathering = Gathering(jev, event, policy, usage)
    try:
        votes = gathering.run(to_judge)
    except JevError as exc:
        assessment.state = Assessment.State.FAILED
        assessment.error = str(exc)
        assessment.finished_at = timezone.now()
        votes = {}
    assessment.candidates_screened_out = gathering.screened_out
    assessment.requests = usage.requests
    assessment.retries = usage.retries
    assessment.input_tokens = usage.input_tokens
    assessment.cost_usd = cost_usd(usage.input_tokens)
    assessment.latency_ms = round((time.monotonic() - started) * 1000)
    assessment.model_name = usage.model
    assessment.offline_standin = usage.standin
    assessment.save()
    if assessment.state == Assessment.State.FAILED:
        return  # no verdicts, no changes: a Jev outage leaves every memory as it was
    shadow_thresholds = Thresholds.from_data(shadow.thresholds) if shadow else None
    verdicts = []
    for memory in memories:
        if memory.pk in settled:
            disposition, memory_votes, shadow_disposition = settled[memory.pk], {}, None
        elif memory.pk in votes:
            memory_votes = votes[memory.pk]
            disposition = decide(memory_votes, source=event.source, policy=policy)
            shadow_disposition = (
                decide(memory_votes, source=event.source, policy=shadow_thresholds)
                if shadow_thresholds
                else None
            )
        else:
            continue  # screened out: unrelated without a full vote, nothing to record
        verdicts.append(
            Verdict(
                tenant_id=event.tenant_id,
                assessment=assessment,
                memory=memory,
                event=event,
                row_version=memory.row_version,
                disposition=disposition,
                proposed_status=PROPOSED_STATUS.get(disposition),
                shadow_policy=shadow if shadow_disposition else None,
                shadow_disposition=shadow_disposition,
                **memory_votes,
            )
        )
    Verdict.objects.bulk_create(verdicts, batch_size=500)
    _record_checks(verdicts, now)


def _record_checks(verdicts: list[Verdict], now) -> None:
    """p_true is the latest bearing still_true vote; last_checked_at is when anything judged it.
    Neither is a status, so no transition; neither races with a reviewer's decision."""
    checked = [v.memory_id for v in verdicts]
    Memory.objects.filter(pk__in=checked).update(last_checked_at=now)
    for verdict in verdicts:
        if verdict.disposition in BEARING:
            Memory.objects.filter(pk=verdict.memory_id).update(p_true=verdict.still_true)


def apply_verdicts(assessment: Assessment) -> dict[int, Memory]:
    """Apply each recorded verdict at most once. Returns successors written, by memory id."""
    successors = {}
    label = PolicyVersion.objects.get(pk=assessment.policy_id).label
    # Only verdicts that can move something: most of a large pool is unrelated.
    actionable = [*POLICY_ACTIONS, Disposition.EXPIRED]
    pending = (
        assessment.verdicts.filter(applied=False, disposition__in=actionable)
        .order_by("pk")
        .values_list("pk", "memory_id")
    )
    for verdict_id, memory_id in list(pending):
        successor = _apply(verdict_id, Actor.policy(label), remember_successor=assessment.remember_successor)
        if successor is not None:
            successors[memory_id] = successor
    return successors


def _apply(verdict_id: int, actor: Actor, *, remember_successor: bool) -> Memory | None:
    with transaction.atomic():
        verdict = Verdict.objects.select_for_update().select_related("memory", "event").get(pk=verdict_id)
        if verdict.applied:
            return None
        memory, event = verdict.memory, verdict.event
        if verdict.disposition == Disposition.EXPIRED:
            action, actor = "expire", Actor.system("ttl-check")
        elif (
            verdict.disposition in POLICY_ACTIONS and memory.status in POLICY_ACTIONS[verdict.disposition][1]
        ):
            action = POLICY_ACTIONS[verdict.disposition][0]
        else:
            return None  # unrelated, directive, hypothetical, frozen, or already where it should be
        reason = verdict_reason(verdict, event, actor)
        successor = None
        try:
            with transaction.atomic():
                if action == "supersede" and remember_successor:
                    successor = memory_write(
                        event=event,
                        kind=memory.kind,
                        subject=memory.subject,
                        content=event.text,
                        written_by=str(actor),
                        user_id=memory.user_id,
                        agent_id=memory.agent_id,
                        thread_id=memory.thread_id,
                        supersedes=memory,
                        seen_version=verdict.row_version,
                        actor=actor,
                        reason=reason,
                        verdict=verdict,
                    )
                else:
                    transition(
                        obj=memory,
                        action=action,
                        actor=actor,
                        reason=reason,
                        seen_version=verdict.row_version,
                        verdict=verdict,
                    )
        except LifecycleError as exc:
            # A reviewer moved the memory after it was judged: their decision stands.
            logger.info("verdict %s not applied: %s", verdict.pk, exc)
            return None
        Verdict.objects.filter(pk=verdict.pk).update(applied=True)
        return successor


def verdict_reason(verdict: Verdict, event: SourceEvent, actor: Actor) -> str:
    if verdict.disposition == Disposition.EXPIRED:
        until = f"{verdict.memory.valid_until:%Y-%m-%d %H:%M} UTC"
        return f"hard TTL passed (valid until {until}), seen on event {event.pk}"
    if verdict.disposition == Disposition.NO_SOURCE:
        return f"its source event {verdict.memory.source_event_id} was erased; needs a person to re-source it"
    votes = f"still_true {verdict.still_true:.2f}"
    if verdict.disposition in (Disposition.SUPERSEDED, Disposition.CONTRADICTED):
        votes += f", replaces {verdict.replaces:.2f}"
    elif verdict.disposition == Disposition.PARTIAL:
        votes += f", partial {verdict.partial:.2f}"
    elif verdict.disposition == Disposition.UNCERTAIN:
        votes += " (inside the review band)"
    return f"{verdict.disposition} by {actor}: {votes} on {event.source} event '{_snippet(event.text)}'"


def _snippet(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
