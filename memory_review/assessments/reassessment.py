"""Reassessment on change (issue 9, item 7): what rested on a memory that changed, or was
decided under a policy that changed, is looked at again, with the reason on the assessment.

* A guideline or policy memory superseded or forgotten: its dependents are the live memories
  written from the same source event, supported by it (`it supports them`) or refining it. They
  are judged again by Jev against an event that says what changed (a `policy` event, recorded
  like any other), or sent to review by a person.
* A new policy version adopted: the live memories whose latest vote it decides otherwise are
  decided again from their stored votes (no Jev call), under the new version, as new verdicts
  against a `policy` event recording the adoption, of an assessment that says why it ran.
"""

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from memory_review.lifecycle import Actor, LifecycleError, permits, transition
from memory_review.memories.models import LIVE_STATUSES, Memory, MemoryLink, MemoryStatus
from memory_review.memories.services import event_record

from . import questions as q
from .dispatch import enqueue_on_commit
from .invalidation import apply_verdicts
from .leases import finish
from .models import Assessment, PolicyVersion, Verdict
from .policy import PROPOSED_STATUS, Thresholds, decide

# The kinds of memory others rest on: a change to one of these is worth a second look downstream.
GUIDING_KINDS = (Memory.Kind.POLICY, Memory.Kind.DECISION, Memory.Kind.CONFIG)
CHANGED = (MemoryStatus.SUPERSEDED, MemoryStatus.DELETED, MemoryStatus.CONTRADICTED, MemoryStatus.EXPIRED)
REPLAYED = Assessment.REPLAYED_MODEL


class ReassessmentError(ValueError):
    """Nothing to reassess, or not allowed; nothing was written."""


def dependents(memory: Memory) -> list[Memory]:
    """Live memories resting on this one: from its source event, supported by it, or refining it."""
    return list(resting_on(memory))


DEPENDENTS_COUNTED_UP_TO = 1000


def dependents_shown(memory: Memory, *, most: int = 20) -> tuple[tuple[int, bool], list[Memory]]:
    """How many rest on it (counted up to DEPENDENTS_COUNTED_UP_TO, and whether there are more)
    and the first `most` of them: what a page shows, at any count (one import's event can be the
    source of hundreds of thousands)."""
    found = resting_on(memory)
    return found.count_up_to(DEPENDENTS_COUNTED_UP_TO), list(found[:most])


def resting_on(memory: Memory):
    """The live memories it supports or that refine it, and those written from its event."""
    links = MemoryLink.objects.for_tenant(memory.tenant)
    supported = links.filter(src=memory, kind=MemoryLink.Kind.SUPPORTS).values("dst_id")
    refining = links.filter(dst=memory, kind=MemoryLink.Kind.REFINES).values("src_id")
    return (
        Memory.objects.for_tenant(memory.tenant)
        .filter(
            Q(pk__in=supported) | Q(pk__in=refining) | Q(source_event_id=memory.source_event_id),
            status__in=LIVE_STATUSES,
        )
        .exclude(pk=memory.pk)
        .order_by("pk")
    )


def worth_reassessing(memory: Memory) -> bool:
    """A guideline that no longer holds, with something resting on it."""
    return memory.kind in GUIDING_KINDS and memory.status in CHANGED


def change_text(memory: Memory) -> str:
    """What Jev reads as the event: what changed, with the successor's words where there is one.
    A forgotten memory's words are gone, so only its subject is named."""
    if memory.status == MemoryStatus.SUPERSEDED and memory.superseded_by_id:
        successor = Memory.objects.get(pk=memory.superseded_by_id)
        return (
            f"The {memory.kind} “{memory.subject}” changed. It said: {memory.content} "
            f"It now says: {successor.content}"
        )
    if memory.status == MemoryStatus.DELETED:
        return f"The {memory.kind} “{memory.subject}” was withdrawn and no longer applies."
    return (
        f"The {memory.kind} “{memory.subject}” no longer holds ({memory.status}): it said: {memory.content}"
    )


def reassess(memory: Memory, *, actor: Actor, enqueue=None) -> Assessment:
    """Queue Jev's judgment of the dependents against an event saying what changed."""
    found = dependents(memory)
    if not found:
        raise ReassessmentError(f"nothing live rests on memory {memory.pk}")
    with transaction.atomic():
        event = event_record(
            tenant=memory.tenant,
            source="policy",
            text=change_text(memory),
            user_id=memory.user_id,
            agent_id=memory.agent_id,
            thread_id=memory.thread_id,
        )
        assessment = Assessment.objects.create(
            tenant=memory.tenant,
            purpose=Assessment.Purpose.INVALIDATION,
            event=event,
            policy=PolicyVersion.objects.for_tenant(memory.tenant).active(),
            question_set_version=q.INVALIDATION_VERSION,
            # Memories are cited by id, never quoted: an erasure blanks a subject, not this.
            reason=f"Reassessment asked by {actor}: memory {memory.pk} is now "
            f"{memory.status}, and {_count(len(found))} {'rests' if len(found) == 1 else 'rest'} on it.",
            targets=[m.pk for m in found],
        )
        enqueue_on_commit(assessment, enqueue)
    return assessment


def send_to_review(memory: Memory, *, actor: Actor) -> int:
    """Flag each active dependent for a person, with the reason; returns how many moved."""
    moved = 0
    for dependent in dependents(memory):
        if not permits(dependent, actor.kind, "flag"):
            continue  # already in review, or frozen: a person has it
        try:
            transition(
                obj=dependent,
                action="flag",
                actor=actor,
                # By id, never quoted: audit rows cannot be erased, subjects can.
                reason=f"It rests on memory {memory.pk}, which is now {memory.status}.",
                seen_version=dependent.row_version,
            )
        except LifecycleError:
            continue  # moved meanwhile: whoever moved it decided
        moved += 1
    return moved


# --- a new policy version -----------------------------------------------------------------------


def _latest(tenant):
    """The ids of the latest verdict with votes of each live memory (a subquery)."""
    return (
        Verdict.objects.for_tenant(tenant)
        .filter(memory__status__in=LIVE_STATUSES, bears__isnull=False, still_true__isnull=False)
        .values("memory_id")
        .annotate(last=Max("pk"))
        .values("last")
    )


def _redecisions(tenant, version: PolicyVersion):
    """(verdict id, the disposition `version` gives it) for each live memory whose latest vote
    it decides otherwise, in id order: the votes streamed 5,000 at a time as plain values (a
    tenant of two million live memories never sits in memory as model instances). Votes from a
    review-only source are left out: such a source may only flag, and the new verdict's event
    (the adoption) would not carry its source."""
    policy = Thresholds.from_data(version.thresholds)
    rows = (
        Verdict.objects.filter(pk__in=_latest(tenant))
        .order_by("pk")
        .values_list("pk", "disposition", "event__source", *Verdict.VOTE_NAMES)
    )
    for pk, stored, source, *votes in rows.iterator(chunk_size=5000):
        if source in policy.review_only_sources:
            continue
        disposition = decide(dict(zip(Verdict.VOTE_NAMES, votes, strict=True)), policy=policy)
        if disposition != stored:
            yield pk, disposition


def _with_verdicts(changes: list[tuple[int, str]]) -> list[tuple[Verdict, str]]:
    found = Verdict.objects.select_related("event").in_bulk([pk for pk, _ in changes])
    return [(found[pk], disposition) for pk, disposition in changes]


def redecided_count(
    tenant, version: PolicyVersion, *, first: int = 50
) -> tuple[int, list[tuple[Verdict, str]]]:
    """How many live memories redecided() finds, and the first `first` of them (the policies
    page's: only those are read as verdicts)."""
    count, listed = 0, []
    for change in _redecisions(tenant, version):
        count += 1
        if len(listed) < first:
            listed.append(change)
    return count, _with_verdicts(listed)


def redecided(tenant, version: PolicyVersion) -> list[tuple[Verdict, str]]:
    """The live memories whose latest vote `version` decides otherwise, with its disposition."""
    return _with_verdicts(list(_redecisions(tenant, version)))


def redecide(tenant, version: PolicyVersion, *, actor: Actor) -> Assessment:
    """Decide again, under the adopted version, every live memory whose latest vote it decides
    otherwise: new verdicts with the stored votes, then applied as the pipeline applies them."""
    if version.mode != PolicyVersion.Mode.ACTIVE:
        raise ReassessmentError(f"{version.label} is {version.mode}: only the active policy decides")
    changes = redecided(tenant, version)
    if not changes:
        raise ReassessmentError(f"{version.label} decides every live memory's latest vote as before")
    with transaction.atomic():
        # The change is the evidence: a policy event, as the design records any policy change.
        # (A verdict is one memory against one event: the votes' own events are judged already.)
        event = event_record(
            tenant=tenant,
            source="policy",
            text=f"Policy {version.label} adopted: {version.note or 'new thresholds'}. Memories whose "
            "latest votes it decides otherwise are decided again from those votes.",
        )
        assessment = Assessment.objects.create(
            tenant=tenant,
            purpose=Assessment.Purpose.INVALIDATION,
            event=event,
            policy=version,
            model_name=REPLAYED,
            judged_at=timezone.now(),
            question_set_version=q.INVALIDATION_VERSION,
            state=Assessment.State.RUNNING,
            reason=f"Policy {version.label} was adopted; {actor} asked to decide again the "
            f"{_count(len(changes))} whose latest vote it "
            "decides otherwise, from the stored votes (no Jev call).",
            targets=[verdict.memory_id for verdict, _ in changes],
            candidates_total=len(changes),
        )
        Verdict.objects.bulk_create(
            Verdict(
                tenant=tenant,
                assessment=assessment,
                memory_id=verdict.memory_id,
                event=event,
                # The version the vote was cast on: a person who acted since keeps their decision
                # (the pipeline's _version_to_act_on), as with any late vote.
                row_version=verdict.row_version,
                disposition=disposition,
                proposed_status=PROPOSED_STATUS.get(disposition),
                **verdict.votes,
            )
            for verdict, disposition in changes
        )
    try:
        apply_verdicts(assessment)
    except Exception as exc:  # recorded, not left "running" with no word on why
        return finish(assessment, error=f"{type(exc).__name__}: {exc}")
    return finish(assessment)


def _count(n: int) -> str:
    return f"{n} live memor{'y' if n == 1 else 'ies'}"
