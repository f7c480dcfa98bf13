"""Why a memory is in front of a person, in the words a person would use: the evidence that
put it where it is (the new event, verbatim), the six votes on it, and one sentence ("Jev cannot
tell whether Monday's Slack message replaces this: still true 0.46, and the policy asks a person
between 0.35 and 0.65"). The memory page and the review flow show it above everything else."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Subquery
from django.utils import timezone

from memory_review.assessments.models import Disposition, Verdict
from memory_review.assessments.policy import BEARING, DEFAULTS, Thresholds
from memory_review.audit.models import MOVES_NEWEST_FIRST, Transition
from memory_review.memories.models import Memory, MemoryStatus, SourceEvent
from memory_review.tenancy.names import actor_names

from . import words

# A channel as a sentence names its message.
MESSAGE = {
    "chat": "chat message", "email": "email", "slack": "Slack message", "tool": "tool result",
    "document": "document", "policy": "policy change", "crm": "CRM record", "ticket": "support ticket",
    "agent": "agent note",
}  # fmt: skip
VOTES = (
    ("bears", "bears on it", "Does the event bear on this memory?"),
    ("still_true", "still true", "Is the memory still true after the event?"),
    ("replaces", "replaces it", "Does the event replace the memory with something new?"),
    ("partial", "changes part", "Does the event change only part of the memory?"),
    ("hypothetical", "hypothetical", "Is the event hypothetical (a what-if)?"),
    ("directive", "an instruction", "Is the event an instruction rather than a fact?"),
)


BAR = 100  # a vote's bar at 1.0, in its little graphic's units


@dataclass(frozen=True)
class Vote:
    name: str
    words: str
    question: str
    value: float | None

    @property
    def width(self) -> float:
        return round((self.value or 0) * BAR, 1)


@dataclass(frozen=True)
class Evidence:
    """What put the memory where it is, and how to say so."""

    sentence: str
    note: str  # said after the sentence, muted: "(no reason given)"
    move: Transition | None  # the move that put it in its status, if it ever moved
    mover: str  # who made that move, by name
    verdict: Verdict | None  # the vote shown: what sent it to review, else the newest bearing one
    event: SourceEvent | None  # the new evidence, verbatim (None when erased or never any)
    votes: tuple[Vote, ...]
    band: tuple[float, float]  # where the policy asks a person (contradict_at, confirm_at)
    status: str  # the memory's: "why it is here" is said only of an item in review

    @property
    def in_review(self) -> bool:
        return self.status == MemoryStatus.NEEDS_REVIEW

    @property
    def why_label(self) -> str:
        """The sentence's label: "Why it is here" in review; elsewhere why it is what it is."""
        return "Why it is here" if self.in_review else f"Why it is {words.status_words(self.status)}"

    @property
    def evidence_label(self) -> str:
        """In review, the vote that sent it there; elsewhere the newest that bears on it."""
        return "The new evidence" if self.in_review else "The newest evidence"

    @property
    def event_erased(self) -> bool:
        return self.verdict is not None and self.verdict.event.erased_at is not None

    @property
    def band_x(self) -> float:
        """Where the review band starts on still true's bar."""
        return round(self.band[0] * BAR, 1)

    @property
    def band_width(self) -> float:
        return round((self.band[1] - self.band[0]) * BAR, 1)


def evidence_for(memory: Memory, *, now: datetime | None = None) -> Evidence:
    """What to show beside the memory: in review, the vote that sent it there; otherwise (or
    when a person sent it) the newest vote that bears on it, never one Jev found unrelated. The
    sentence explains the last move by its own vote and names the people its reason cites.
    Up to four queries: the last move, its vote, the newest bearing vote, the names."""
    move = (
        Transition.objects.filter(memory=memory)
        .only("seq", "action", "actor", "reason", "to_status", "from_status", "created_at", "verdict_id")
        .order_by(*MOVES_NEWEST_FIRST)
        .first()
    )
    votes = Verdict.objects.filter(memory=memory).select_related("event", "assessment__policy")
    in_review = memory.status == MemoryStatus.NEEDS_REVIEW
    behind_move = votes.filter(pk=move.verdict_id).first() if move is not None and move.verdict_id else None
    verdict = behind_move if in_review else None
    if verdict is None:  # the newest bearing vote, from the (memory, -id) index, read with its joins
        newest = (
            Verdict.objects.filter(memory=memory, disposition__in=BEARING).order_by("-id").values("pk")[:1]
        )
        verdict = votes.filter(pk=Subquery(newest)).first() or behind_move
    names = actor_names([move.actor, *words.people_in([move.reason])]) if move else {}
    mover = names[move.actor] if move else ""
    said = sentence(
        memory, move=move, mover=mover, verdict=behind_move, policy=_policy_of(behind_move), now=now,
        reason=words.named(move.reason, names) if move else "",
    )  # fmt: skip
    note = ""  # a person's move with no reason typed ends with a note, shown muted, never quoted
    if move is not None and move.actor.startswith("user:") and said.endswith(f" {words.NO_REASON}"):
        said, note = said.removesuffix(f" {words.NO_REASON}"), words.NO_REASON
    policy = _policy_of(verdict)
    event = verdict.event if verdict is not None and verdict.event.erased_at is None else None
    return Evidence(
        sentence=said,
        note=note,
        move=move,
        mover=mover,
        verdict=verdict,
        event=event,
        votes=tuple(Vote(name, label, question, getattr(verdict, name)) for name, label, question in VOTES)
        if verdict is not None
        else (),
        band=(policy.contradict_at, policy.confirm_at),
        status=memory.status,
    )


def _policy_of(verdict: Verdict | None) -> Thresholds:
    if verdict is None or verdict.assessment.policy is None:
        return DEFAULTS
    return Thresholds.from_data(verdict.assessment.policy.thresholds)


def when(at: datetime, now: datetime | None = None) -> str:
    """A day as a person says it: today's, yesterday's, Monday's, 12 Nov's."""
    now = timezone.localtime(now or timezone.now())
    day = timezone.localtime(at).date()
    if day == now.date():
        return "today's"
    if day == now.date() - timedelta(days=1):
        return "yesterday's"
    if now.date() - day < timedelta(days=7):
        return f"{day:%A}'s"
    return f"the {day.day} {day:%b}" + (f" {day.year}" if day.year != now.year else "")


def _message(verdict: Verdict, now) -> str:
    """The event as a sentence names it: "Monday's Slack message", "the email of 12 Nov"."""
    event = verdict.event
    noun = MESSAGE.get(event.source, "message")
    said = when(event.occurred_at, now)
    return f"{said} {noun}" if said.endswith("'s") else f"the {noun} of {said.removeprefix('the ')}"


def sentence(
    memory: Memory, *, move, mover: str, verdict, policy: Thresholds, now=None, reason: str | None = None
) -> str:
    """Why the memory is where it is, in one sentence a person would write. `reason`: the move's
    reason as shown (its people named), else as recorded. A person's reason is quoted only when
    they typed one; otherwise the sentence ends with a note (NO_REASON) that they gave none."""
    status = memory.status
    if move is None:
        return f"Written by {written_by(memory.written_by)}; nothing has moved it since."
    by_policy = move.actor.startswith("policy:")
    if verdict is not None and (
        by_policy or status == MemoryStatus.NEEDS_REVIEW and verdict.pk == move.verdict_id
    ):
        return _from_vote(memory, move=move, verdict=verdict, policy=policy, now=now)
    if status == MemoryStatus.NEEDS_REVIEW and memory.flagged_for == Disposition.NO_SOURCE:
        return "Its source was erased, so nothing supports it any more: a person decides whether it stays."
    reason = move.reason if reason is None else reason
    done = f"{mover} {_did(move)} {words.ago(move.created_at, now)}"
    if move.actor.startswith("user:"):
        said = words.typed(reason)
        return f"{done}: “{said}”" if said else f"{done} {words.NO_REASON}"
    return f"{done}: {reason}"


def _from_vote(memory: Memory, *, move, verdict: Verdict, policy: Thresholds, now) -> str:
    message = _message(verdict, now)
    still = f"still true {verdict.still_true:.2f}" if verdict.still_true is not None else "no vote on truth"
    low, high = policy.contradict_at, policy.confirm_at
    disposition, status = verdict.disposition, memory.status
    if status == MemoryStatus.NEEDS_REVIEW:
        if disposition == Disposition.UNCERTAIN:
            doubt = "replaces this" if (verdict.replaces or 0) >= 0.5 else "leaves this true"
            return (
                f"Jev cannot tell whether {message} {doubt}: {still}, and the policy asks a person "
                f"between {low:.2f} and {high:.2f}."
            )
        if disposition == Disposition.PARTIAL:
            return (
                f"Jev reads {message} as changing part of this ({still}, partly changed "
                f"{verdict.partial:.2f}): a person writes what is true now."
            )
        if disposition in (Disposition.CONTRADICTED, Disposition.SUPERSEDED):
            reading = "replacing" if disposition == Disposition.SUPERSEDED else "contradicting"
            noun = MESSAGE.get(verdict.event.source, "message")
            return (
                f"Jev reads {message} as {reading} this ({still}, below {low:.2f}), but a {noun} may only "
                "send a memory to a person, never end it: confirm the kill or approve it."
            )
    if status == MemoryStatus.CONTRADICTED:
        return f"Jev read {message} as contradicting this: {still}, below the policy's {low:.2f}."
    if status == MemoryStatus.SUPERSEDED:
        return f"Jev read {message} as replacing this: {still}, replaces {verdict.replaces:.2f}."
    if status == MemoryStatus.ACTIVE and move.action == "confirm":
        return f"Jev read {message} as leaving this true: {still}, above the policy's {high:.2f}."
    return f"The policy moved it on {message}: {still}."


def written_by(author: str) -> str:
    """Who wrote a memory, in words: `user:3` is their name, `agent:support-bot` "agent
    support-bot", `user:maria.chen@acme.example` (written by an import) the address."""
    if ":" not in author:
        return author
    named = actor_names([author]).get(author, author)
    return named.partition(":")[2] if named == author else named


def headline(memory: Memory, *, move, mover: str, verdict, policy: Thresholds) -> str:
    """The same, short enough for one line of a list: what it comes to first, the numbers after."""
    if move is None:
        return "Never moved"
    if verdict is not None and (move.actor.startswith("policy:") or verdict.pk == move.verdict_id):
        still = f"still true {verdict.still_true:.2f}" if verdict.still_true is not None else "no truth vote"
        noun = MESSAGE.get(verdict.event.source, "message")
        if memory.status == MemoryStatus.NEEDS_REVIEW:
            if verdict.disposition == Disposition.UNCERTAIN:
                return (
                    f"Unsure: {still} (a person decides {policy.contradict_at:.2f}–{policy.confirm_at:.2f})"
                )
            if verdict.disposition == Disposition.PARTIAL:
                return f"Partly changed ({verdict.partial:.2f}): rewrite what is true now"
            if verdict.disposition in (Disposition.CONTRADICTED, Disposition.SUPERSEDED):
                return f"{Disposition(verdict.disposition).label} by a {noun}, which may only flag: {still}"
        return f"{Disposition(verdict.disposition).label} by a {noun}: {still}"
    if memory.status == MemoryStatus.NEEDS_REVIEW and memory.flagged_for == Disposition.NO_SOURCE:
        return "Its source was erased"
    if move.actor.startswith("user:"):
        reason = words.typed(move.reason)
        return f"{mover} {_did(move)}: “{reason}”" if reason else f"{mover} {_did(move)} (no reason given)"
    return f"{mover} {_did(move)}"


def _did(move: Transition) -> str:
    return {
        "flag": "sent it to review", "approve": "approved it", "freeze": "froze it", "unfreeze": "unfroze it",
        "restore": "restored it", "contradict": "marked it contradicted", "supersede": "marked it superseded",
        "forget": "forgot it", "erase": "erased it", "expire": "expired it", "reopen": "reopened it",
        "hold": "held it before it was trusted",
    }.get(move.action, f"moved it to {move.to_status.replace('_', ' ')}")  # fmt: skip
