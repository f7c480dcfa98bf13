"""The agents' API, v1: JSON in, JSON out. Bad input is a 400 that names the field, and nothing
is written; a missing or wrong token is a 401; another tenant's URL is a 404."""

import hashlib
import json
import logging
from functools import partial, wraps

from django.conf import settings
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from pydantic import BaseModel, ValidationError

from memory_review import params
from memory_review.agents import feed, inforce, shapes, webhooks
from memory_review.agents import receipts as receipt_log
from memory_review.agents.models import WebhookDelivery
from memory_review.assessments import selectors as assessments_selectors
from memory_review.assessments.invalidation import observe_events
from memory_review.assessments.models import Assessment, NoActivePolicy, Verdict
from memory_review.assessments.promotion import candidate_propose
from memory_review.integrity import seals
from memory_review.integrity.db_context import set_tenant
from memory_review.lifecycle import LifecycleError
from memory_review.memories.models import SourceEvent
from memory_review.tenancy.models import ApiToken
from memory_review.tenancy.names import actor_names
from memory_review.tenancy.tokens import token_authenticate, token_is_live

from . import intake, long_polls, schemas, throttle
from .openapi import schema

logger = logging.getLogger(__name__)


def bad_request(fields: dict[str, str]) -> JsonResponse:
    return JsonResponse({"error": "invalid input", "fields": fields}, status=400)


def not_found() -> JsonResponse:
    return JsonResponse({"error": "not found"}, status=404)


def unauthorized() -> JsonResponse:
    response = JsonResponse({"error": "missing or invalid API token"}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="memory-review"'
    return response


def rate_limited(wait: int) -> JsonResponse:
    response = JsonResponse(
        {"error": f"rate limit: {settings.API_RATE_PER_MINUTE} requests a minute per token"}, status=429
    )
    response["Retry-After"] = str(wait)
    return response


def api_view(view):
    """Authenticate the bearer token and resolve the tenant in the URL (404 if not the token's)."""

    @csrf_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args, **kwargs):
        header = request.headers.get("Authorization", "")
        token = (
            token_authenticate(header.removeprefix("Bearer ").strip())
            if header.startswith("Bearer ")
            else None
        )
        if token is None:
            return unauthorized()
        if token.tenant.slug != slug:
            return not_found()
        wait = throttle.wait_seconds(token.prefix)
        if wait is not None:
            return rate_limited(wait)
        set_tenant(token.tenant_id)  # cleared by RequestContextMiddleware
        if not seals.unchanged(ApiToken, token.pk, obj=token):
            # A hash planted around the application, or a revocation undone: one indexed read.
            logger.warning("api token %s does not match its seal: refused", token.pk)
            return unauthorized()
        request.api_token = token
        try:
            params.screen(request)
            params.path_ids(kwargs)
            return view(request, token.tenant, *args, **kwargs)
        except BadInput as exc:
            return bad_request(exc.fields)
        except params.BadParameter as exc:
            return bad_request({exc.name: exc.problem})
        except LifecycleError as exc:
            return JsonResponse({"error": str(exc)}, status=409)
        except Http404:
            return not_found()
        except NoActivePolicy as exc:
            return JsonResponse({"error": f"{exc}: an admin must adopt one first"}, status=409)

    return wrapper


class BadInput(Exception):
    """Becomes a 400 naming each field's problem (api_view turns it into the response)."""

    def __init__(self, fields: dict[str, str]):
        super().__init__(fields)
        self.fields = fields


def parse(request: HttpRequest, model: type[BaseModel]):
    """The validated body; BadInput naming what is wrong otherwise."""
    if request.content_type != "application/json":
        raise BadInput({"body": "send JSON with Content-Type: application/json"})
    if params.json_too_deep(request.body):  # one stated limit for JSON from outside, not the parser's
        raise BadInput({"body": f"nested deeper than {params.JSON_MAX_DEPTH} levels"})
    try:
        return model.model_validate_json(request.body or b"")  # RequestDataTooBig: a 413 (errors.py)
    except ValidationError as exc:
        raise BadInput(schemas.error_fields(exc)) from exc


def query(request: HttpRequest, model: type[BaseModel]):
    """The validated query string; BadInput naming what is wrong otherwise."""
    repeated = [name for name in request.GET if len(request.GET.getlist(name)) > 1]
    if repeated:
        raise BadInput({name: "given more than once" for name in repeated})
    try:
        return model.model_validate(request.GET.dict())
    except ValidationError as exc:
        raise BadInput(schemas.error_fields(exc)) from exc


def with_etag(request: HttpRequest, body: dict, *, cursor: int | None) -> HttpResponse:
    """The JSON answer and its feed `cursor`, with a weak ETag of the answer without the cursor;
    304 when the agent already holds it. The cursor moves with every change in the tenant, most of
    them to other scopes; an agent told 304 holds these very memories, and the cursor it kept with
    them is still one to follow from (what changed since is heard again, and applies the same)."""
    etag = f'W/"{hashlib.sha256(json.dumps(body, separators=(",", ":")).encode()).hexdigest()[:32]}"'
    if etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=304)
    else:
        response = JsonResponse({**body, "cursor": cursor})
    response["ETag"] = etag
    return response


def _event(tenant, pk: int) -> SourceEvent:
    event = SourceEvent.objects.for_tenant(tenant).filter(pk=pk).first()
    if event is None:
        raise BadInput({"source_event_id": "no such event in this tenant"})
    if event.erased_at is not None:  # nothing may bring an erased person's data back
        raise LifecycleError(f"event {event.pk} was erased (right to forget): nothing can cite it")
    return event


@require_POST
@api_view
def events(request: HttpRequest, tenant):
    body = parse(request, schemas.EventIn)
    used = _checked_receipts(tenant, body.receipts, "receipts")
    with transaction.atomic():
        (observed,) = _observe(tenant, [body], [used])
    return JsonResponse(observed, status=202)


@require_POST
@api_view
def events_batch(request: HttpRequest, tenant):
    """Many events in one POST, one transaction: every event is checked first (a problem is named
    by its place, `events.3.text`) and none is recorded unless all are; each is charged to the
    token's rate."""
    body = parse(request, schemas.EventBatchIn)
    wait = throttle.wait_seconds(request.api_token.prefix, calls=len(body.events) - 1)
    if wait is not None:
        return rate_limited(wait)
    used = [
        _checked_receipts(tenant, event.receipts, f"events.{n}.receipts")
        for n, event in enumerate(body.events)
    ]
    with transaction.atomic():
        observed = _observe(tenant, body.events, used)
    return JsonResponse({"events": observed}, status=202)


def _observe(tenant, bodies: list[schemas.EventIn], used: list[list[receipt_log.Used]]) -> list[dict]:
    """Record the events (and the receipts that came with each) and queue their assessments, in
    the caller's transaction: the events in one INSERT and their assessments in another, however
    many came in the POST. What the agent is told of each, in the order posted."""
    with seals.ledger_batch():  # the seals of the receipts, events and assessments in one INSERT
        for receipts in used:
            if receipts:
                receipt_log.record(tenant, receipts)
        events = intake.record_events(tenant=tenant, bodies=bodies)
        assessments = observe_events(events, remember_successor=[body.remember_successor for body in bodies])
    return [
        {
            "event_id": event.pk,
            "assessment_id": assessment.pk,
            "state": assessment.state,
            "assessment_url": f"/api/v1/t/{tenant.slug}/assessments/{assessment.pk}",
            "page_url": reverse("assessment-detail", args=[tenant.slug, assessment.pk]),
        }
        for event, assessment in zip(events, assessments, strict=True)
    ]


@require_http_methods(["GET", "POST"])
@api_view
def memories(request: HttpRequest, tenant):
    if request.method == "GET":
        return in_force(request, tenant)
    body = parse(request, schemas.MemoryIn)
    memory = intake.write_memory(event=_event(tenant, body.source_event_id), body=body, channel="agent")
    return JsonResponse(
        {
            "memory_id": memory.pk,
            "status": memory.status,
            "version": memory.version,
            "subject": memory.subject,
            "held_because": memory.held_because,
            "trust": memory.trust,
            "hidden_text": shapes.hidden(memory),
        },
        status=201,
    )


def in_force(request: HttpRequest, tenant):
    """What is in force for a scope (agents/inforce.py says what that means), a page at a time,
    with the change feed's cursor to follow it from."""
    asked = query(request, schemas.InForceQuery)
    scope = asked.model_dump(include=set(inforce.SCOPE_COLUMNS))
    found = inforce.snapshot(
        tenant, **scope, narrower=asked.narrower, kind=asked.kind, at=asked.as_of, after=asked.after,
        limit=asked.limit,
    )  # fmt: skip
    names = actor_names(shapes.actors(found.held))
    body = {
        "scope": scope,
        "narrower": asked.narrower,
        "as_of": asked.as_of.isoformat() if asked.as_of else None,
        "memories": [shapes.held(item, names) for item in found.held],
        "next_after": found.next_after,
    }
    return with_etag(request, body, cursor=found.cursor)


@require_GET
@api_view
def changes(request: HttpRequest, tenant):
    """Every change to what is in force after the agent's cursor, in commit order (agents/feed.py)."""
    asked = query(request, schemas.ChangesQuery)
    token = request.api_token
    try:
        with long_polls.slot(token.prefix, asked.wait):
            found = feed.read(
                tenant, asked.after, limit=asked.limit, wait=asked.wait, allowed=partial(token_is_live, token)
            )
    except long_polls.TooMany as exc:
        response = JsonResponse({"error": str(exc), "limit": exc.setting}, status=429)
        response["Retry-After"] = str(long_polls.RETRY_AFTER_SECONDS)
        return response
    except feed.NotAllowed:
        return unauthorized()  # revoked while it waited: nothing changed since is given
    except feed.CursorAhead as exc:
        raise BadInput({"after": str(exc)}) from exc
    names = actor_names(shapes.actors(found.changes))
    return JsonResponse(
        {
            "changes": [shapes.change(row, names) for row in found.changes],
            "cursor": found.cursor,
            "more": found.more,
        }
    )


def _checked_receipts(tenant, responses: list[schemas.ResponseIn], field: str) -> list[receipt_log.Used]:
    """The receipts as the service takes them; BadInput naming each version that is not the
    memory's, and Http404 when one names a memory this tenant does not hold."""
    batch = [
        receipt_log.Used(
            response_id=response.response_id,
            used_at=response.used_at,
            memories=tuple((used.id, used.version) for used in response.memories),
            **response.scope.model_dump(),
        )
        for response in responses
    ]
    try:
        problems = receipt_log.version_problems(tenant, batch)
    except receipt_log.UnknownMemory as exc:
        raise Http404(str(exc)) from exc
    if problems:
        raise BadInput({f"{field}.{n}.memories.{m}.version": say for (n, m), say in problems.items()})
    return batch


@require_POST
@api_view
def receipts(request: HttpRequest, tenant):
    """Which memories (id and content version) the agent's responses used: one insert a batch."""
    body = parse(request, schemas.ReceiptsIn)
    recorded = receipt_log.record(tenant, _checked_receipts(tenant, body.responses, "responses"))
    # A retry of a batch whose answer was lost writes nothing twice, and says so.
    return JsonResponse({"recorded": recorded.written, "already_recorded": recorded.already}, status=201)


def _by(request: HttpRequest) -> str:
    return f"agent:{request.api_token.name}"


def _refused(exc: webhooks.EndpointRefused) -> BadInput:
    return BadInput({exc.field: exc.problem})


@require_http_methods(["GET", "POST"])
@api_view
def webhook_list(request: HttpRequest, tenant):
    """The tenant's webhook endpoints; POST registers one (its secret is in this answer only)."""
    if request.method == "GET":
        return JsonResponse({"webhooks": [shapes.endpoint(row) for row in webhooks.endpoints(tenant)]})
    body = parse(request, schemas.WebhookIn)
    try:
        endpoint, secret = webhooks.endpoint_create(
            tenant, url=body.url, kinds=body.kinds, description=body.description, by=_by(request)
        )
    except webhooks.EndpointRefused as exc:
        raise _refused(exc) from exc
    return JsonResponse(shapes.endpoint(endpoint, secret=secret), status=201)


@require_http_methods(["GET", "PATCH", "DELETE"])
@api_view
def webhook_detail(request: HttpRequest, tenant, pk: int):
    """One endpoint and a page of its delivery log; PATCH enables or disables it; DELETE removes
    it (kept, with its log; nothing more is sent)."""
    endpoint = get_object_or_404(webhooks.endpoints(tenant), pk=pk)
    if request.method == "DELETE":
        webhooks.endpoint_remove(endpoint, by=_by(request))
        return HttpResponse(status=204)
    if request.method == "PATCH":
        body = parse(request, schemas.WebhookChange)
        try:
            if body.enabled:
                webhooks.endpoint_enable(endpoint, by=_by(request))
            else:
                webhooks.endpoint_disable(endpoint, by=_by(request), reason="disabled through the API")
        except webhooks.EndpointRefused as exc:
            raise _refused(exc) from exc
        endpoint = webhooks.endpoints(tenant).get(pk=pk)
    asked = query(request, schemas.DeliveriesQuery) if request.method == "GET" else schemas.DeliveriesQuery()
    rows, next_before = webhooks.log(endpoint, before=asked.before, limit=asked.limit)
    return JsonResponse(
        {
            **shapes.endpoint(endpoint),
            "deliveries": [shapes.delivery(row) for row in rows],
            "next_before": next_before,
        }
    )


@require_POST
@api_view
def webhook_redeliver(request: HttpRequest, tenant, pk: int, delivery: int):
    """Send one delivery again, under its webhook-id."""
    row = get_object_or_404(
        WebhookDelivery.objects.for_tenant(tenant).select_related("endpoint"), pk=delivery, endpoint_id=pk
    )
    try:
        webhooks.redeliver(row, by=_by(request))
    except webhooks.EndpointRefused as exc:
        raise _refused(exc) from exc
    return JsonResponse({"id": row.pk, "webhook_id": row.msg_id, "state": "pending"}, status=202)


@require_POST
@api_view
def candidates(request: HttpRequest, tenant):
    body = parse(request, schemas.CandidateIn)
    candidate = candidate_propose(  # atomic, like every service that writes
        tenant=tenant,
        claim=body.claim,
        kind=body.kind,
        subject=body.subject,
        source_event=None if body.source_event_id is None else _event(tenant, body.source_event_id),
        proposed_by=f"agent:{body.proposed_by}",
        **body.scope.model_dump(),
    )
    return JsonResponse(
        {
            "candidate_id": candidate.pk,
            "status": candidate.status,
            "check_failed": candidate.check_failed,
            "assessment_id": candidate.assessment_id,
        },
        status=202 if candidate.assessment_id else 201,
    )


@require_GET
@api_view
def assessment_detail(request: HttpRequest, tenant, pk: int):
    asked = query(request, schemas.AssessmentQuery)
    assessment = get_object_or_404(Assessment.objects.for_tenant(tenant).select_related("policy"), pk=pk)
    counts = assessments_selectors.verdict_counts(assessment)
    verdicts = assessments_selectors.verdict_values(assessment, after=asked.after, limit=asked.limit + 1)
    more, verdicts = len(verdicts) > asked.limit, verdicts[: asked.limit]
    return JsonResponse(
        {
            "id": assessment.pk,
            "purpose": assessment.purpose,
            "state": assessment.state,
            "error": assessment.error,
            "event_id": assessment.event_id,
            "model": assessment.model_name,
            "offline_standin": assessment.offline_standin,
            "question_set_version": assessment.question_set_version,
            "policy": assessment.policy.label,
            "requests": assessment.requests,
            "retries": assessment.retries,
            "input_tokens": assessment.input_tokens,
            "cost_usd": format(assessment.cost_usd, "f"),
            "latency_ms": assessment.latency_ms,
            "counts": {
                "candidates": assessment.candidates_total,
                "screened_out": assessment.candidates_screened_out,
                "verdicts": counts.verdicts,
                "applied": counts.applied,
                "by_disposition": counts.by_disposition,
            },
            "verdicts": [
                {
                    "memory_id": v["memory_id"],
                    "subject": v["memory__subject"],
                    "disposition": v["disposition"],
                    "votes": {name: v[name] for name in Verdict.VOTE_NAMES},
                    "proposed_status": v["proposed_status"],
                    "applied": v["applied"],
                    "memory_status": v["memory__status"],
                    "shadow_disposition": v["shadow_disposition"],
                }
                for v in verdicts
            ],
            "next_after": verdicts[-1]["pk"] if more else None,
        }
    )


@require_GET
def openapi(request: HttpRequest):
    return JsonResponse(schema())
