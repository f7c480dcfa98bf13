"""Observe an event: which memories it touches, what Jev votes, what the policy does (DESIGN §4).

The order matters: every verdict of an event is written (and committed) before any status
changes, so a crash leaves a complete record and a redelivered task only finishes the applying.
"""

import json
import logging
from collections import namedtuple
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from functools import cache

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from memory_review.audit.models import Transition
from memory_review.integrity.seals import ledger_batch
from memory_review.lifecycle import Actor, IllegalTransition, StaleVersion, permits, transition
from memory_review.memories import holds
from memory_review.memories.models import (
    EXPIRABLE,
    LIVE_STATUSES,
    Memory,
    MemoryLink,
    MemoryStatus,
    SourceEvent,
)
from memory_review.memories.services import memory_write

from . import questions as q
from .dispatch import enqueue_on_commit
from .jev import Jev, JevError, get_jev, noul
from .leases import FINISHED, claim, finish, heartbeat, release
from .models import Assessment, Disposition, PolicyVersion, Verdict
from .policy import BEARING, POLICY_ACTIONS, PROPOSED_STATUS, Thresholds, decide, held_kill, policy_action
from .usage import Usage

logger = logging.getLogger(__name__)


JUDGED_FIELDS = (
    "tenant_id", "content", "kind", "status", "valid_until", "row_version", "source_event_id",
)  # fmt: skip


# -- choosing what to judge ----------------------------------------------------------------------


def candidates_for(event: SourceEvent, *, only: list[int] | None = None):
    """Live memories the event can bear on: same tenant, and in its scope. A memory with a NULL
    scope column applies to everyone below it; an event with a NULL column speaks for everyone
    below it, so it reaches narrower memories too. A reassessment names its memories (`only`):
    those still live, wherever their scope."""
    in_scope = Q()
    for column in ("user_id", "agent_id", "thread_id"):
        value = getattr(event, column)
        if value is not None:
            in_scope &= Q(**{f"{column}__isnull": True}) | Q(**{column: value})
    if only is not None:
        in_scope = Q(pk__in=only)
    memories = Memory.objects.filter(
        in_scope, tenant_id=event.tenant_id, status__in=LIVE_STATUSES, deleted_at__isnull=True
    )
    # Only what judging reads: a large pool's rows are read on every event.
    return (
        memories.exclude(source_event=event)
        # Two columns of the source event, not an event object per memory.
        .annotate(source_channel=F("source_event__source"), source_erased_at=F("source_event__erased_at"))
        .only(*JUDGED_FIELDS)
        .order_by("pk")
    )


_CandidateRow = namedtuple("_CandidateRow", ("id", *JUDGED_FIELDS, "source_channel", "source_erased_at"))


class Candidate(_CandidateRow):
    """A memory as judging reads it: the columns it judges by, as a row, not a model instance
    (an event reads a hundred; building them was half of the read's CPU). It answers what the
    pipeline asks of a memory by the same names."""

    __slots__ = ()

    @property
    def pk(self) -> int:
        return self.id

    is_expired = Memory.is_expired


def judged(event: SourceEvent, *, only: list[int] | None = None) -> list[Candidate]:
    """`candidates_for(event)`'s memories, as rows."""
    return list(map(Candidate._make, candidates_for(event, only=only).values_list(*Candidate._fields)))


def code_checks(memories: Sequence[Memory | Candidate], now) -> tuple[dict[int, str], list]:
    """What code settles without asking: hard TTL passed (active or in review: a vote must never
    confirm it back), or the source was erased. Frozen memories stay pinned."""
    settled, rest = {}, []
    for memory in memories:
        if memory.status in EXPIRABLE and memory.is_expired(now):
            settled[memory.pk] = Disposition.EXPIRED
        elif _source_erased(memory):
            settled[memory.pk] = Disposition.NO_SOURCE
        else:
            rest.append(memory)
    return settled, rest


# -- asking Jev ----------------------------------------------------------------------------------


def tokens(value) -> int:
    """A deliberately generous estimate (three characters a token where English averages about
    four), so it never undercounts a request past Jev's budget."""
    return len(json.dumps(value, ensure_ascii=False)) // 3 + 1


def _source_erased(memory: Memory) -> bool:
    if hasattr(memory, "source_erased_at"):  # candidates_for's annotation
        return memory.source_erased_at is not None
    return memory.source_event.erased_at is not None


def _fact(memory: Memory) -> dict:
    source = memory.source_channel if hasattr(memory, "source_channel") else memory.source_event.source
    return {"fact": memory.content, "kind": memory.kind, "source": source}


def _fact_tokens(memory: Memory) -> int:
    """`tokens(_fact(memory))` without serialising each of a large pool's memories; the 60
    characters cover the keys, the kind and the source channel."""
    return (len(memory.content) + 60) // 3 + 1


def _event_state(event: SourceEvent) -> dict:
    return {"text": event.text, "source": event.source}


def _questions(templates: Sequence[q.Question], i: int | None = None) -> dict:
    return dict(_question_set(tuple(templates), i))


@cache
def _question_set(templates: tuple[q.Question, ...], i: int | None) -> tuple:
    """The typed questions for memory `i`: the same for every event, so built once a process
    (each is a validated SDK object; a 100-memory event asks 600 of them)."""
    out = []
    for template in templates:
        qid = template.id.format(i=i)
        out.append((qid, noul(qid, template.instructions.format(i=i), template.yes, template.no)))
    return tuple(out)


def _question_tokens(templates: Sequence[q.Question]) -> int:
    return sum(_template_tokens(t) for t in templates)


@cache
def _template_tokens(template: q.Question) -> int:
    """A template's tokens, counted once a process: every event's batches ask them."""
    return tokens([template.instructions, template.yes, template.no])


def pack(event: SourceEvent, memories: Sequence[Memory], *, per_memory, limit: int) -> list[list[Memory]]:
    """Batches of at most `limit` memories that fit Jev's budgets: the state plus the longest
    question within JEV_STATE_TOKENS, the whole request within JEV_REQUEST_TOKENS, the
    event-level questions counted in each (the first sent carries them, and any may be first).
    A long event or long memories make batches smaller, never a failed request."""
    base = tokens(_event_state(event))
    longest = max(_question_tokens([t]) for t in (*per_memory, *q.EVENT_QUESTIONS))
    per_memory_cost, event_cost = _question_tokens(per_memory), _question_tokens(q.EVENT_QUESTIONS)
    batches: list[list[Memory]] = [[]]
    state, request = base, base + event_cost
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
            state, request = base, base + event_cost
        batches[-1].append(memory)
        state += size
        request += size + per_memory_cost
    return [batch for batch in batches if batch]


def _request(
    event: SourceEvent, batch: Sequence[Memory], templates: Sequence[q.Question]
) -> tuple[dict, dict]:
    questions = {}
    for i in range(len(batch)):
        questions.update(_questions(templates, i))
    return {"event": _event_state(event), "memories": [_fact(m) for m in batch]}, questions


class Gathering:
    """All of one event's requests, in flight together.

    The event-level questions ride in the first request sent, beside its memories (DESIGN §4):
    a request of their own was one more in six of an event's, against Jev's rate limit and
    both ends' work. Below the screening threshold the judgment batches all go out at once;
    above it, each screening answer sends off the judgment of the memories it kept as soon as
    it arrives, so the second round trip overlaps the tail of the first. The client caps
    concurrency per process, and the rate per process or across every host
    (JEV_SHARED_REQUESTS_PER_MINUTE).
    """

    def __init__(self, jev: Jev, event: SourceEvent, policy: Thresholds, usage: Usage):
        self.jev, self.event, self.policy, self.usage = jev, event, policy, usage
        self.pending: dict[Future, tuple[str, Sequence[Memory], bool]] = {}
        self.event_owed = True  # the event-level questions, until a request carries them
        self.event_votes: dict[str, float] = {}
        self.votes: dict[int, dict[str, float]] = {}
        self.screened_out = 0

    def run(self, memories: list[Memory]) -> dict[int, dict[str, float]]:
        if not memories:
            return {}
        try:
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
        except BaseException:
            # The requests run on the process's threads (Jev.submit): whatever went wrong, none of
            # this event's is left running once it is recorded, as when each event had its own.
            for future in self.pending:
                future.cancel()
            wait(self.pending)
            raise
        if self.usage.failure:
            raise self.usage.failure
        return {pk: {**self.event_votes, **votes} for pk, votes in self.votes.items()}

    def _send(self, kind: str, batch: Sequence[Memory], state: dict, questions: dict) -> None:
        carries_event, self.event_owed = self.event_owed, False
        if carries_event:
            questions = {**questions, **_questions(q.EVENT_QUESTIONS)}
        self.pending[self.jev.submit(state, questions)] = (kind, batch, carries_event)

    def _judge(self, memories: Sequence[Memory]) -> None:
        for batch in pack(self.event, memories, per_memory=q.MEMORY_QUESTIONS, limit=settings.JEV_BATCH_SIZE):
            self._send("judge", batch, *_request(self.event, batch, q.MEMORY_QUESTIONS))

    def _receive(self, future: Future, kind: str, batch: Sequence[Memory], carries_event: bool) -> None:
        try:
            reply = future.result()
        except JevError as exc:
            self.usage.fail(exc)
            for other in self.pending:
                other.cancel()  # no point asking more: the assessment has failed
            return
        except CancelledError:
            return
        self.usage.add(reply)
        if self.usage.failure:
            return
        if carries_event:
            self.event_votes = {question.id: reply.votes[question.id] for question in q.EVENT_QUESTIONS}
        if kind == "screen":
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


def observe_event(
    *,
    event: SourceEvent,
    remember_successor: bool = False,
    enqueue: Callable[[Assessment], None] | None = None,
    recorded_now: bool = False,
) -> Assessment:
    """The invalidation assessment of `event` (one per event), queued for a worker on commit.
    `recorded_now`: the caller recorded the event in this transaction, so it has none yet (one
    INSERT, where looking first costs three more round trips on every event an agent posts; the
    unique constraint still refuses a second)."""
    if recorded_now:
        return observe_events([event], remember_successor=[remember_successor], enqueue=enqueue)[0]
    fields = dict(tenant_id=event.tenant_id, event=event, purpose=Assessment.Purpose.INVALIDATION)
    defaults = {
        "policy": PolicyVersion.objects.for_tenant(event.tenant_id).active(),
        "question_set_version": q.INVALIDATION_VERSION,
        "remember_successor": remember_successor,
    }
    assessment, created = Assessment.objects.get_or_create(**fields, defaults=defaults)
    if created:
        enqueue_on_commit(assessment, enqueue)
    return assessment


def observe_events(
    events: Sequence[SourceEvent],
    *,
    remember_successor: Sequence[bool],
    enqueue: Callable[[Assessment], None] | None = None,
) -> list[Assessment]:
    """`observe_event` for events of one tenant the caller recorded in this transaction: their
    assessments in one INSERT (SQLite: one for every 999 values), sealed by one ledger statement,
    under one read of the policy (a batch of ten events was ten of each). Each is queued on
    commit."""
    if not events:
        return []
    tenants = {event.tenant_id for event in events}
    if len(tenants) > 1:  # one tenant's policy judges them all
        raise ValueError(f"events of one tenant are observed together, not of {len(tenants)}")
    policy = PolicyVersion.objects.for_tenant(events[0].tenant_id).active()
    assessments = Assessment.objects.bulk_create(
        [
            Assessment(
                tenant_id=event.tenant_id,
                event=event,
                purpose=Assessment.Purpose.INVALIDATION,
                policy=policy,
                question_set_version=q.INVALIDATION_VERSION,
                remember_successor=remember,
            )
            for event, remember in zip(events, remember_successor, strict=True)
        ]
    )
    for assessment in assessments:
        enqueue_on_commit(assessment, enqueue)
    return assessments


def run_invalidation(
    assessment_id: int,
    *,
    tenant_id: int | None = None,
    jev: Jev | None = None,
    claimed: Assessment | None = None,
) -> Assessment:
    """Judge, record, then apply. Safe to run twice, or in two workers at once: a lease keeps a
    second worker from asking Jev again, votes are recorded once, and each verdict is applied at
    most once. No transaction is open while Jev answers. `claimed`: the assessment as its lease
    was just taken (claim()), by a caller that read its purpose so."""
    if tenant_id is None:
        tenant_id = Assessment.objects.values_list("tenant_id", flat=True).get(pk=assessment_id)
    assessment = claimed or claim(tenant_id=tenant_id, assessment_id=assessment_id)
    if assessment.state in FINISHED:
        return assessment
    with heartbeat(assessment):
        try:
            pending = None
            if assessment.judged_at is None:
                assessment, pending = _judge_and_record(assessment, jev or get_jev())
                if assessment.state == Assessment.State.FAILED:
                    return assessment
            apply_verdicts(assessment, pending=pending)
        except OperationalError:
            release(assessment)  # transient: the task retries and may take it straight back
            raise
        except Exception as exc:  # anything else would leave it "running" with no word on why
            logger.exception("assessment %s failed", assessment.pk)
            assessment.refresh_from_db()  # what was rolled back is not reported as recorded
            return finish(assessment, error=f"{type(exc).__name__}: {exc}")
        return finish(assessment)


def _judge_and_record(assessment: Assessment, jev: Jev) -> tuple[Assessment, list[tuple[int, int]] | None]:
    """The assessment as recorded, and the (verdict, memory) ids that may move something, when
    this worker recorded them (None: ask the database)."""
    event = assessment.event  # read with the lease (claim())
    if event.erased_at is not None:  # erased while queued: its text is gone, and never goes to Jev
        error = f"event {event.pk} was erased (right to forget) before it was judged"
        return finish(assessment, error=error), None
    policy = Thresholds.from_data(assessment.policy.thresholds)
    shadow = PolicyVersion.objects.filter(tenant_id=event.tenant_id).shadow()
    now = timezone.now()
    memories = judged(event, only=assessment.targets)
    settled, to_judge = code_checks(memories, now)
    usage = Usage()
    gathering = Gathering(jev, event, policy, usage)
    try:
        votes, error = gathering.run(to_judge), None
    except JevError as exc:
        votes, error = {}, str(exc)
    figures = {
        **usage.fields(),
        "candidates_total": len(memories),
        "candidates_screened_out": gathering.screened_out,
        "judged_at": None if error else timezone.now(),
    }
    # The seals of the figures, the votes and the memories' checks in one ledger INSERT.
    with transaction.atomic(), ledger_batch():
        # Only the first to record does: another worker, whose lease this one outlived, may have.
        if not Assessment.objects.filter(pk=assessment.pk, judged_at__isnull=True).update(**figures):
            return Assessment.objects.select_related("policy").get(pk=assessment.pk), None
        for name, value in figures.items():
            setattr(assessment, name, value)
        if error:  # no verdicts, no changes: memories stay as they were
            return finish(assessment, error=error), None
        verdicts = _verdicts(assessment, event, memories, settled, votes, policy, shadow, now)
        pks = Verdict.objects.insert_values(VERDICT_COLUMNS, verdicts)
        _record_checks(verdicts, now, policy)
    pending = [(pk, v.memory_id) for pk, v in zip(pks, verdicts, strict=True) if v.disposition in ACTIONABLE]
    return assessment, pending


VOTES = ("bears", "still_true", "replaces", "partial", "hypothetical", "directive")
VERDICT_COLUMNS = (
    "tenant_id", "assessment_id", "memory_id", "event_id", "row_version", "disposition", "proposed_status",
    "shadow_policy_id", "shadow_disposition", "applied", "created_at", *VOTES,
)  # fmt: skip
# A verdict as it is recorded: a hundred are written on every event, without a model instance each.
VerdictRow = namedtuple("VerdictRow", VERDICT_COLUMNS)


def _verdicts(assessment, event, memories, settled, votes, policy, shadow, now) -> list[VerdictRow]:
    shadow_thresholds = Thresholds.from_data(shadow.thresholds) if shadow else None
    no_votes = (None,) * len(VOTES)
    verdicts = []
    for memory in memories:
        pk = memory.id  # once: the memory is looked up by it four times below
        if pk in settled:
            disposition, memory_votes, shadow_disposition = settled[pk], {}, None
        elif pk in votes:
            memory_votes = votes[pk]
            disposition = decide(memory_votes, policy=policy)
            shadow_disposition = decide(memory_votes, policy=shadow_thresholds) if shadow_thresholds else None
        else:
            continue  # screened out: unrelated without a full vote, nothing to record
        verdicts.append(
            VerdictRow(
                event.tenant_id, assessment.pk, pk, event.pk, memory.row_version, disposition,
                PROPOSED_STATUS.get(disposition), shadow.pk if shadow_disposition else None,
                shadow_disposition, False, now,
                *(tuple(map(memory_votes.get, VOTES)) if memory_votes else no_votes),
            )
        )  # fmt: skip
    return verdicts


def _record_checks(verdicts: list[VerdictRow], now, policy: Thresholds) -> None:
    """p_true is the latest bearing still_true vote (with its distance from the policy's review
    band, the queue's order), and last_checked_at when it was cast: the memory page shows them
    together. Memories an event does not bear on are not written at all (on a pool of 100, that
    was an UPDATE of 100 rows per event for a timestamp). None is a status, so no transition;
    none races with a reviewer's decision."""
    bearing = [v for v in verdicts if v.disposition in BEARING]
    rows = [(v.memory_id, v.still_true, policy.gap(v.still_true), now) for v in bearing]
    Memory.objects.update_values(["p_true", "threshold_gap", "last_checked_at"], rows)


def apply_verdicts(
    assessment: Assessment, *, pending: list[tuple[int, int]] | None = None
) -> dict[int, Memory]:
    """Apply each recorded verdict at most once (`_apply` checks under a lock). Returns
    successors written, by memory id. `pending`: the (verdict, memory) ids to apply, when the
    caller just recorded them; otherwise the database says which are left."""
    successors = {}
    label = assessment.policy.label  # claim() read it with the assessment
    thresholds = Thresholds.from_data(assessment.policy.thresholds)
    if pending is None:  # only verdicts that can move something: most of a large pool is unrelated
        pending = list(
            assessment.verdicts.filter(applied=False, disposition__in=ACTIONABLE)
            .order_by("pk")
            .values_list("pk", "memory_id")
        )
    for verdict_id, memory_id in sorted(pending):
        successor = _apply(
            verdict_id,
            Actor.policy(label),
            remember_successor=assessment.remember_successor,
            policy=thresholds,
        )
        if successor is not None:
            successors[memory_id] = successor
    return successors


ACTIONABLE = (*POLICY_ACTIONS, Disposition.EXPIRED)
KILL_ACTIONS = ("contradict", "supersede")  # what `held_kill` is asked about


def _apply(verdict_id: int, actor: Actor, *, remember_successor: bool, policy: Thresholds) -> Memory | None:
    with transaction.atomic():
        verdict = Verdict.objects.select_for_update().select_related("memory", "event").get(pk=verdict_id)
        if verdict.applied:
            return None
        memory = verdict.memory
        rule = None
        if verdict.disposition == Disposition.EXPIRED:
            action, actor = "expire", Actor.system("ttl-check")
        else:
            # The policy's own disposition, through the review-only rule for this source.
            action, rule = policy_action(verdict.disposition, source=verdict.event.source, policy=policy)
            # (A confirmation moves only a memory in review: the trail is read for those alone, not
            # for every vote that finds a memory still true.)
            if (
                action == "confirm"
                and memory.status == MemoryStatus.NEEDS_REVIEW
                and holds.unreleased(memory)
            ):
                # A vote never releases a memory held before it was trusted: a person does.
                logger.info(
                    "verdict %s not applied: memory %s was held before it was trusted", verdict.pk, memory.pk
                )
                return None
            held = held_kill(memory.tenant_id, memory, action) if action in KILL_ACTIONS else None
            if held:  # not measured safe alone in this stratum: a person decides (quality/gate.py)
                action, rule = "flag", held
            if action is None:  # unrelated, directive, hypothetical; or a review-only confirmation
                if rule:
                    logger.info("verdict %s not applied: %s", verdict.pk, rule)
                return None
        seen = _version_to_act_on(verdict, memory)
        if seen is None or not permits(memory, actor.kind, action):
            return None  # a person moved it since, or it is already where it should be (or frozen)
        try:
            # No savepoint of its own: a refused move rolls this verdict's whole transaction back,
            # its flag with it, which holds nothing else (one round trip less each way on the
            # common path). The flag first: the move's tally stripes are rows every move of the
            # tenant between the same statuses may wait for, held from their upsert to the commit,
            # so after a plain move nothing of this transaction comes after them (a successor
            # written in the memory's place has its own rows to write after them).
            with transaction.atomic(savepoint=False):
                Verdict.objects.filter(pk=verdict.pk).update(applied=True)
                return _move(verdict, memory, action, actor, seen, remember_successor, rule)
        except (StaleVersion, IllegalTransition) as exc:
            # The refusal's text names the memory's subject, often a person: the log keeps ids.
            logger.info("verdict %s not applied to memory %s: %s", verdict.pk, memory.pk, type(exc).__name__)
            return None


def _version_to_act_on(verdict: Verdict, memory: Memory) -> int | None:
    """The row version the policy may act on: the one it judged, or the current one when only
    other votes have moved the memory since (content never changes, so the vote still holds).
    None when a person acted since: their decision stands."""
    if memory.row_version == verdict.row_version:
        return verdict.row_version
    moved_since = Transition.objects.filter(memory=memory, row_version__gt=verdict.row_version)
    if moved_since.filter(actor__startswith="user:").exists():
        return None
    return memory.row_version


def _move(
    verdict: Verdict,
    memory: Memory,
    action: str,
    actor: Actor,
    seen: int,
    remember_successor: bool,
    rule: str | None,
):
    event = verdict.event
    reason = verdict_reason(verdict, event, actor) + (f"; {rule}" if rule else "")
    if action == "supersede" and remember_successor and event.erased_at is None:
        # The successor's words are the event's: held for a person when they hide text or touch
        # instructions, payment details, permissions or identity (memories/holds.py).
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
            seen_version=seen,
            actor=actor,
            reason=reason,
            verdict=verdict,
            link_origin=MemoryLink.Origin.ASSESSMENT,
        )
        holds.hold_if_untrusted(successor)
        return successor
    # The verdict's transaction is this move (`_apply`): a refusal takes the whole of it back.
    transition(
        obj=memory,
        action=action,
        actor=actor,
        reason=reason,
        seen_version=seen,
        verdict=verdict,
        savepoint=False,
    )
    return None


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
    # The event is cited by id, never quoted: audit rows cannot be erased, events can.
    return f"{verdict.disposition} by {actor}: {votes} on {event.source} event {event.pk}"
