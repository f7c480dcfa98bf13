"""Log records that say which request, tenant and assessment they belong to.

RequestContextMiddleware sets the request id, the database context holds the tenant, the
assessment task sets the assessment. `ContextFilter` copies them onto every record; with
LOG_FORMAT=json each record is one JSON object a log pipeline can index, otherwise a line with
the ids in brackets.

`WithoutQueryStrings` keeps the servers' request lines (runserver's `django.server`, gunicorn's
errors) to the path: a query string carries search words and the agents' user ids, which an
erasure could not reach in a log.
"""

import json
import logging
import re
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from django.core.signals import request_finished

from memory_review.integrity import db_context

request_id: ContextVar[str | None] = ContextVar("log_request_id", default=None)
assessment_id: ContextVar[int | None] = ContextVar("log_assessment_id", default=None)


@contextmanager
def bound(var: ContextVar, value):
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def forget_request(**kwargs) -> None:
    """request_finished: the next thing this thread logs is not part of that request."""
    request_id.set(None)


request_finished.connect(forget_request, dispatch_uid="memory_review.ops.logs.forget_request")


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get() or "-"
        record.tenant_id = db_context.current_tenant() or "-"
        record.assessment_id = assessment_id.get() or "-"
        return True


# From a "?" to the request line's " HTTP/1.1", a quote or the end of the line: a query with a
# raw space in it goes too.
QUERY_STRING = re.compile(r"\?.*?(?=\sHTTP/\d|[\"\n]|$)")


class WithoutQueryStrings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "?" in message:
            record.msg, record.args = QUERY_STRING.sub("", message), ()
        return True


class RefusalsWithoutTraceback(logging.Filter):
    """A refused request (403, 404, 400) is the application working: Django logs a 403 with the
    PermissionDenied's traceback, which buried the demo's terminal. Its one line says what was
    refused; a traceback stays for what went wrong (5xx)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = record.exc_text = None
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("request_id", "tenant_id", "assessment_id"):
            value = getattr(record, key, "-")
            entry[key] = None if value == "-" else value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
