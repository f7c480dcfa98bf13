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


def _post(summary: str, model: str, created: str) -> dict:
    return {
        "post": {
            "summary": summary,
            "parameters": [_TENANT],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}},
            },
            "responses": {created: {"description": "Accepted."}, **_ERRORS},
        }
    }


@cache
def schema() -> dict:
    _, definitions = models_json_schema(
        [(m, "validation") for m in (schemas.EventIn, schemas.MemoryIn, schemas.CandidateIn)],
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
            "/api/v1/t/{slug}/memories": _post("Write a memory tied to its source event.", "MemoryIn", "201"),
            "/api/v1/t/{slug}/candidates": _post(
                "Propose a memory for promotion (shadow mode: a reviewer decides).", "CandidateIn", "202"
            ),
            "/api/v1/t/{slug}/assessments/{id}": {
                "get": {
                    "summary": "An assessment's state, counts, cost and verdicts.",
                    "parameters": [
                        _TENANT,
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                    ],
                    "responses": {"200": {"description": "The assessment."}, **_ERRORS},
                }
            },
        },
    }
