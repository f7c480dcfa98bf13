"""Recorded text as a person reads it (issue 15, item 4). Audit reasons cite what they rest on by
id on purpose (an audit row outlives the memory's words, and an id never quotes anyone):
`memory 16`, `candidate 57`, `user:3`, `policy:v1`, `slack event 108`, `still_true 0.37`. On a
screen each becomes a name: the memory's subject (a link to it), the person's name, "policy v1",
"a Slack message", "still true 0.37". The record itself is unchanged, and exported as written."""

import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from memory_review.assessments.models import CandidateStatus, PromotionCandidate
from memory_review.memories.models import Memory, MemoryStatus, SourceEvent
from memory_review.tenancy.names import actor_names
from memory_review.workflow.decisions import NO_REASON

TOKEN = re.compile(
    r"(?P<actor>\b(?:user|policy|system|agent|job|token):[\w.-]+)"
    r"|\buser (?P<user>\d+)\b"
    r"|\bmemory (?P<memory>\d+)\b"
    r"|\bcandidate (?P<candidate>\d+)\b"
    r"|\b(?:(?P<channel>[a-z]+) )?event (?P<event>\d+)\b"
    r"|\b(?P<snake>[a-z]+(?:_[a-z]+)+)\b"
)
CHANNELS = {value: label for value, label in SourceEvent.Source.choices}
MESSAGE = {"chat": "a chat message", "email": "an email", "slack": "a Slack message", "tool": "a tool result",
           "document": "a document", "policy": "a policy change", "crm": "a CRM record",
           "ticket": "a support ticket", "agent": "an agent note"}  # fmt: skip
STATUS_WORDS = {**dict(MemoryStatus.choices), **dict(CandidateStatus.choices)}
# The actors a reason names: `user:2`, `policy:v1`, and "user 2" (as the two-person rule writes it).
PEOPLE = re.compile(r"(?P<actor>\b(?:user|policy|system|agent|job|token):[\w.-]+)|\buser (?P<user>\d+)\b")


def waited(at: datetime, now: datetime | None = None) -> str:
    """How long since `at`, in its largest unit ("2 weeks", "3 hours"); "under a minute", never
    "0 minutes"."""
    now = now or timezone.now()
    if now - at < timedelta(minutes=1):
        return "under a minute"
    return timesince(at, now).split(",")[0]


def ago(at: datetime, now: datetime | None = None) -> str:
    """When `at` was, as a person says it: "2 weeks ago", "just now" (never "0 minutes ago")."""
    now = now or timezone.now()
    return "just now" if now - at < timedelta(minutes=1) else f"{waited(at, now)} ago"


def typed(reason: str | None) -> str | None:
    """What the person typed as their reason, or None when they typed none (the app wrote
    "Approved in review (no reason given)"), so a screen never quotes words nobody wrote."""
    reason = (reason or "").strip()
    return None if not reason or reason.endswith(NO_REASON) else reason


def people_in(texts: Iterable[str | None]) -> set[str]:
    """The actors these texts name, as actor strings (`user 2` is `user:2`), for one actor_names()."""
    return {
        match["actor"] or f"user:{match['user']}" for text in texts for match in PEOPLE.finditer(text or "")
    }


def named(text: str, names: dict[str, str]) -> str:
    """`text` (plain) with each actor it names said by name (from actor_names over people_in())."""

    def name(match: re.Match) -> str:
        actor = match["actor"] or f"user:{match['user']}"
        said = names.get(actor, actor)
        if said != actor:
            return said
        return "a person no longer here" if actor.startswith("user:") else actor.replace(":", " ")

    return PEOPLE.sub(name, text or "")


def status_words(status: str | None) -> str:
    """A status as the screens say it: "needs review", never `needs_review`."""
    return str(STATUS_WORDS.get(status, status or "")).lower()


def subjects(tenant, *, memories=(), candidates=()) -> dict[str, dict[int, str]]:
    """The subjects of these memories and candidates, to name them by ({"memory": {id: subject},
    "candidate": {id: subject}}), in two queries."""
    return {
        "memory": dict(
            Memory.objects.for_tenant(tenant).filter(pk__in=set(memories)).values_list("pk", "subject")
        ),
        "candidate": dict(
            PromotionCandidate.objects.for_tenant(tenant)
            .filter(pk__in=set(candidates))
            .values_list("pk", "subject")
        ),
    }


def moved(move) -> str:
    """A move as a sentence's verb phrase: "moved it from needs review to active"."""
    return f"moved it from {status_words(move.from_status)} to {status_words(move.to_status)}"


def in_words(rows: Iterable, tenant, *, attr: str = "reason") -> None:
    """Give each row `<attr>_words`: its recorded text with every id and code said in words,
    linked where it names a memory or a candidate. Three queries for all the rows."""
    rows = list(rows)
    texts = [getattr(row, attr) or "" for row in rows]
    found = [match for text in texts for match in TOKEN.finditer(text)]
    actors = {m["actor"] for m in found if m["actor"]} | {f"user:{m['user']}" for m in found if m["user"]}
    names = actor_names(actors)
    memory_ids = {int(m["memory"]) for m in found if m["memory"]}
    candidate_ids = {int(m["candidate"]) for m in found if m["candidate"]}
    subjects = dict(Memory.objects.for_tenant(tenant).filter(pk__in=memory_ids).values_list("pk", "subject"))
    claims = dict(
        PromotionCandidate.objects.for_tenant(tenant)
        .filter(pk__in=candidate_ids)
        .values_list("pk", "subject")
    )
    for row, text in zip(rows, texts, strict=True):
        setattr(row, f"{attr}_words", render(text, tenant.slug, names, subjects, claims))


def render(text: str, slug: str, names: dict, subjects: dict, claims: dict) -> SafeString:
    out, last = [], 0
    for match in TOKEN.finditer(text):
        out.append(escape(text[last : match.start()]))
        out.append(_word(match, slug, names, subjects, claims))
        last = match.end()
    out.append(escape(text[last:]))
    return mark_safe("".join(out))


def _word(match: re.Match, slug: str, names: dict, subjects: dict, claims: dict) -> str:
    if match["actor"]:
        return escape(names.get(match["actor"], match["actor"].replace(":", " ")))
    if match["user"]:
        return escape(names.get(f"user:{match['user']}", "a person no longer here"))
    if match["memory"]:
        pk = int(match["memory"])
        if pk not in subjects:
            return "a memory of another time"
        url = reverse("memory-detail", args=[slug, pk])
        return format_html('“<a href="{}">{}</a>”', url, subjects[pk])
    if match["candidate"]:
        pk = int(match["candidate"])
        if pk not in claims:
            return "a proposed memory"
        url = reverse("promotion-detail", args=[slug, pk])
        return format_html('the proposed “<a href="{}">{}</a>”', url, claims[pk])
    if match["event"]:
        return escape(MESSAGE.get(match["channel"] or "", "an event"))
    return escape(match["snake"].replace("_", " "))
