"""What the agents' API accepts, as pydantic models: strict types, unknown fields refused, and
every error names its field. The OpenAPI schema is generated from these same models."""

from datetime import datetime
from typing import Annotated

from django.conf import settings
from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from memory_review.agents import feed, inforce, receipts, webhooks
from memory_review.memories.models import Memory, SourceEvent
from memory_review.params import column_range
from memory_review.textlimits import too_long


def no_nul(value: str) -> str:
    if "\x00" in value:  # PostgreSQL refuses NUL in text; say so instead of failing later
        raise ValueError("must not contain NUL characters")
    return value


def in_range(value: datetime) -> datetime:
    # Far ends of the calendar overflow once converted to UTC.
    if not 1900 <= value.year <= 9998:
        raise ValueError("must be a date between the years 1900 and 9998")
    return value


def check_text(value: str) -> str:
    no_nul(value)
    if not value.strip():
        raise ValueError("must not be blank")
    if len(value) > settings.API_MAX_TEXT_CHARS:  # read per request, so tests and ops can change it
        raise ValueError(f"is {len(value)} characters; the limit is {settings.API_MAX_TEXT_CHARS}")
    return value


def one_of(choices: list[str], what: str):
    def check(value: str) -> str:
        if value not in choices:
            raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")
        return value

    return AfterValidator(check)


Text = Annotated[str, AfterValidator(check_text)]
Kind = Annotated[str, one_of(Memory.Kind.values, "kind")]
Source = Annotated[str, one_of(SourceEvent.Source.values, "source")]


def at_most(limit: int):
    """At most `limit` characters as Oracle's NVARCHAR2 counts them (UTF-16 units; textlimits.py)."""

    def check(value: str) -> str:
        if message := too_long(value, limit):
            raise ValueError(message)
        return value

    return AfterValidator(check)


def short_text(limit: int):
    # The schema advertises the limit; the check counts it as Oracle does.
    return Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1),
        Field(json_schema_extra={"maxLength": limit}),
        AfterValidator(no_nul),
        at_most(limit),
    ]


ScopeId = short_text(128)
Subject = short_text(200)
Author = short_text(100)
When = Annotated[AwareDatetime, AfterValidator(in_range)]
LOWEST_ID, HIGHEST_ID = column_range(SourceEvent._meta.pk)  # what the column holds on every database
EventId = Annotated[int, Field(ge=LOWEST_ID, le=HIGHEST_ID)]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class Scope(Strict):
    """Who it is about. Leave a field out for "everyone": a broader scope."""

    user_id: ScopeId | None = None
    agent_id: ScopeId | None = None
    thread_id: ScopeId | None = None


class UsedMemory(Strict):
    id: EventId = Field(description="The memory's id.")
    version: int = Field(ge=1, le=2**31 - 1, description="Its content version, as the agent read it.")


class ResponseIn(Strict):
    """One agent response and the memories it used."""

    response_id: ScopeId = Field(description="The agent's own id for the response.")
    used_at: When = Field(description="When the response was given, with a time zone.")
    scope: Scope = Field(default_factory=Scope, description="Whom it answered, in which thread.")
    memories: list[UsedMemory] = Field(min_length=1, max_length=receipts.MAX_MEMORIES)


class ReceiptsIn(Strict):
    responses: list[ResponseIn] = Field(min_length=1, max_length=receipts.MAX_RESPONSES)


class EventIn(Strict):
    text: Text = Field(description="The evidence, verbatim.")
    source: Source = Field(description=f"One of: {', '.join(SourceEvent.Source.values)}")
    scope: Scope = Field(default_factory=Scope)
    run_id: ScopeId | None = None
    occurred_at: When | None = Field(default=None, description="With a time zone, e.g. 2026-11-29T10:00:00Z.")
    remember_successor: bool = Field(
        default=False, description="Store the event verbatim as the successor of any memory it supersedes."
    )
    receipts: list[ResponseIn] = Field(
        default_factory=list,
        max_length=receipts.MAX_RESPONSES,
        description="Receipts for responses since the last call, recorded with the event.",
    )


# The most events one POST to events/batch carries: a batch is one transaction, and its events are
# charged to the token's rate one by one.
EVENTS_A_BATCH = 100


class EventBatchIn(Strict):
    events: list[EventIn] = Field(
        min_length=1,
        max_length=EVENTS_A_BATCH,
        description=f"Up to {EVENTS_A_BATCH} events, each as POST events takes it; all are recorded or none.",
    )


class MemoryIn(Strict):
    content: Text = Field(description="The memory, verbatim; it is never rewritten.")
    kind: Kind
    subject: Subject = Field(description="What it is about: one live memory per subject and scope.")
    source_event_id: EventId = Field(description="The event it came from (provenance is required).")
    scope: Scope = Field(default_factory=Scope)
    confidence: float = Field(default=1.0, ge=0, le=1)
    valid_until: When | None = Field(default=None, description="Hard TTL, with a time zone.")
    written_by: Author = "agent"


class CandidateIn(Strict):
    claim: Text = Field(description="The proposed memory, verbatim.")
    kind: Kind
    subject: Subject
    source_event_id: EventId | None = Field(
        description="The event that supports it; null is rejected by code."
    )
    scope: Scope = Field(default_factory=Scope)
    proposed_by: Author = "agent"


ChangeKind = Annotated[str, one_of(list(webhooks.EVENT_KINDS), "kind of change or notice")]


class WebhookIn(Strict):
    url: short_text(500) = Field(description="Where to POST: https:// on the public internet.")
    kinds: list[ChangeKind] = Field(
        default_factory=list,
        max_length=len(webhooks.EVENT_KINDS),
        description="The kinds of change, and of notice (health.regressed); empty: every kind of change.",
    )
    description: Annotated[str, AfterValidator(no_nul), at_most(120)] = ""


class WebhookChange(Strict):
    enabled: bool = Field(description="false: nothing is sent (what changes meanwhile waits); true: send.")


VERDICT_PAGE = 500  # an assessment's verdicts in one answer, at most


class Query(BaseModel):
    """A GET's query string: values arrive as text, so types are coerced, but unknown names are
    refused (a misspelt `user_id` must not widen the answer to everyone)."""

    model_config = ConfigDict(extra="forbid")


def page_size(most: int):
    return Annotated[int, Field(ge=1, le=most, description=f"At most this many in a page (1 to {most}).")]


class InForceQuery(Query):
    user_id: ScopeId | None = Field(
        default=None,
        description="This user's memories and the tenant's (user_id null); left out: any user's.",
    )
    agent_id: ScopeId | None = Field(
        default=None,
        description="This agent's memories and every agent's (agent_id null); left out: any agent's.",
    )
    thread_id: ScopeId | None = Field(
        default=None,
        description="This thread's memories and every thread's (thread_id null); left out: any thread's.",
    )
    narrower: bool = Field(
        default=True,
        description="false: a scope column left out matches null only (what applies with no agent or "
        "thread), not any value.",
    )
    kind: Kind | None = None
    as_of: When | None = Field(default=None, description="What was in force then, with a time zone.")
    after: Annotated[int, Field(ge=0, le=HIGHEST_ID)] = Field(
        default=0, description="The `next_after` of the page before (keyset paging)."
    )
    limit: page_size(inforce.MAX_PAGE) = 100


class ChangesQuery(Query):
    after: Annotated[int, Field(ge=0, le=HIGHEST_ID)] = Field(
        description="The `cursor` of the last page you processed; 0 for the beginning."
    )
    wait: Annotated[float, Field(ge=0, le=feed.MAX_WAIT_SECONDS)] = Field(
        default=0, description="Seconds to hold the request open until a change arrives (long poll)."
    )
    limit: page_size(feed.MAX_PAGE) = 100


class AssessmentQuery(Query):
    after: Annotated[int, Field(ge=0, le=HIGHEST_ID)] = Field(
        default=0, description="The `next_after` of the page before: verdicts after this id."
    )
    limit: page_size(VERDICT_PAGE) = VERDICT_PAGE


class DeliveriesQuery(Query):
    before: Annotated[int, Field(ge=1, le=HIGHEST_ID)] | None = Field(
        default=None, description="The `next_before` of the page before (newest first)."
    )
    limit: page_size(webhooks.LOG_PAGE) = 50


def error_fields(exc) -> dict[str, str]:
    """pydantic errors as {"field.path": "what is wrong"}."""
    out = {}
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "body"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        out.setdefault(where, message)
    return out
