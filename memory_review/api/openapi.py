"""The OpenAPI 3.1 document, generated from the pydantic models the views validate with."""

from functools import cache

from pydantic.json_schema import models_json_schema

from . import schemas

_TENANT = {"name": "slug", "in": "path", "required": True, "schema": {"type": "string"}}
_ERRORS = {
    "400": {"description": "Invalid input; `fields` names each problem. Nothing was written."},
    "401": {"description": "Missing or invalid API token."},
    "404": {"description": "No such tenant for this token, or no such object."},
}


def _ids(*names: str) -> list[dict]:
    return [_TENANT] + [
        {"name": name, "in": "path", "required": True, "schema": {"type": "integer"}} for name in names
    ]


def _get(summary: str, query: type, *, extra: dict | None = None, ids: tuple[str, ...] = ()) -> dict:
    """A read whose query parameters are the fields of `query` (the model the view validates with)."""
    properties = query.model_json_schema()["properties"]
    parameters = _ids(*ids)
    for name, info in query.model_fields.items():
        parameters.append(
            {"name": name, "in": "query", "required": info.is_required(), "schema": properties[name],
             "description": info.description or ""}
        )  # fmt: skip
    return {
        "get": {
            "summary": summary,
            "parameters": parameters,
            "responses": {"200": {"description": "The answer."}, **(extra or {}), **_ERRORS},
        }
    }


def _post(summary: str, model: str | None, created: str, *, method="post", ids: tuple[str, ...] = ()) -> dict:
    operation = {
        "summary": summary,
        "parameters": _ids(*ids),
        "responses": {created: {"description": "Accepted."}, **_ERRORS},
    }
    if model is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}},
        }
    return {method: operation}


@cache
def schema() -> dict:
    _, definitions = models_json_schema(
        [
            (m, "validation")
            for m in (
                schemas.EventIn,
                schemas.EventBatchIn,
                schemas.MemoryIn,
                schemas.CandidateIn,
                schemas.ReceiptsIn,
                schemas.WebhookIn,
                schemas.WebhookChange,
            )
        ],
        ref_template="#/components/schemas/{model}",
    )
    return {
        "openapi": "3.1.0",
        "info": {"title": "memory-review agents' API", "version": "1"},
        "components": {
            "schemas": definitions["$defs"],
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/v1/t/{slug}/events": _post(
                "Record an event and queue its invalidation assessment (202 with the assessment id, its API "
                "URL and the URL of its page for people).",
                "EventIn",
                "202",
            ),
            "/api/v1/t/{slug}/events/batch": _post(
                f"Record up to {schemas.EVENTS_A_BATCH} events in one transaction and queue each one's "
                "assessment (202 with, for each in order, what POST events answers). Every event is "
                "checked first: a 400 names the problem by its place (`events.3.text`) and records none. "
                "Each event counts as one call against the token's rate.",
                "EventBatchIn",
                "202",
            ),
            "/api/v1/t/{slug}/memories": {
                **_post("Write a memory tied to its source event.", "MemoryIn", "201"),
                **_get(
                    "What is in force for a scope, a keyset page at a time (`next_after`), with a weak "
                    "ETag; `as_of` answers from the audit trail. A scope column given matches that value "
                    "or null (broader); one left out matches any value (every agent's and thread's "
                    "memories for the user), as an event's scope reaches the memories it judges; "
                    "`narrower=false` makes a column left out match null only. A memory that needs "
                    "review has standing `under_review`; nothing past its hard TTL. The answer's "
                    "`cursor` is the change feed's position these rows are consistent with (list, then "
                    "watch): follow GET changes from the first page's cursor; a change made while you "
                    "page is heard again, and applying it twice gives the same cache. null with `as_of`.",
                    schemas.InForceQuery,
                    extra={
                        "304": {
                            "description": "The memories are those you hold (If-None-Match); keep the "
                            "cursor that came with them."
                        }
                    },
                ),
            },
            "/api/v1/t/{slug}/changes": _get(
                "Every change to what is in force after the cursor, in commit order (created, "
                "rewritten, moved, expired, forgotten, erased); a forgotten or erased memory is a "
                "tombstone. Start from the `cursor` of a GET memories answer (0 replays the tenant's "
                "whole history); keep the page's `cursor` and ask again from it: `more` is true when "
                "another page (of up to `limit`) is ready now; `wait` long-polls. Each change's `seq` is "
                "the one before it plus one. The feed is the tenant's: keep the changes whose `scope` "
                "your scope reaches (as GET memories matches).",
                schemas.ChangesQuery,
            ),
            "/api/v1/t/{slug}/receipts": _post(
                "Report which memories (id and content version) responses used; one insert a batch. "
                "A memory this tenant does not hold is a 404 and nothing is written. A response's "
                "use of a memory at a version is written once: sent again (a retry), it is counted "
                "in `already_recorded`, not `recorded`.",
                "ReceiptsIn",
                "201",
            ),
            "/api/v1/t/{slug}/webhooks": {
                **_get("The tenant's webhook endpoints (never their secrets).", schemas.Query),
                **_post(
                    "Register an endpoint: every change of the kinds named (empty: all), and each notice "
                    "of a kind named (`health.regressed`), is POSTed to it, "
                    "signed as Standard Webhooks says, retried for up to 24 h under one `webhook-id`. "
                    "The answer holds its `secret`, shown this once. Loopback, private, link-local "
                    "and reserved targets are refused.",
                    "WebhookIn",
                    "201",
                ),
            },
            "/api/v1/t/{slug}/webhooks/{id}": {
                **_get(
                    "An endpoint and a page of its delivery log (newest first): each delivery's "
                    "state and every try's response code and latency.",
                    schemas.DeliveriesQuery,
                    ids=("id",),
                ),
                **_post("Enable or disable it.", "WebhookChange", "200", method="patch", ids=("id",)),
                **_post(
                    "Remove it: nothing more is sent, what waited is given up, the log is kept.",
                    None,
                    "204",
                    method="delete",
                    ids=("id",),
                ),
            },
            "/api/v1/t/{slug}/webhooks/{id}/deliveries/{delivery}/redeliver": _post(
                "Send a delivered or given-up delivery again, under its webhook-id.",
                None,
                "202",
                ids=("id", "delivery"),
            ),
            "/api/v1/t/{slug}/candidates": _post(
                "Propose a memory for promotion (shadow mode: a reviewer decides).", "CandidateIn", "202"
            ),
            "/api/v1/t/{slug}/assessments/{id}": _get(
                "An assessment's state, counts and cost, and a keyset page of its verdicts in id "
                "order (an event that bears on thousands of memories pages; `next_after` is null "
                "on the last page).",
                schemas.AssessmentQuery,
                ids=("id",),
            ),
        },
    }
