import re
import uuid

from django.conf import settings

from memory_review.integrity.context import acting_as
from memory_review.integrity.db_context import clear_tenant

from . import logs

# What a proxy's X-Request-ID may be to be kept: a short token of safe characters, starting with
# a letter or digit. Anything else (a formula, markup, a person's words) is replaced with our own:
# the id lands in the audit trail, its exports and the logs.
REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


def request_id_for(request) -> str:
    offered = request.headers.get("X-Request-ID", "")
    return offered if REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex


def writer_of(request) -> str:
    """Who a request writes as, for the seals' ledger: its agent's token, its signed-in person,
    or nobody yet (asked only when a sealed row is written, after authentication ran)."""
    token = getattr(request, "api_token", None)
    if token is not None:
        return f"token:{token.prefix}"
    user = getattr(request, "user", None)
    return f"user:{user.pk}" if user is not None and user.is_authenticated else "anonymous"


class RequestContextMiddleware:
    """Gives each request an id that audit rows record (a proxy's X-Request-ID when it is a safe
    token), names who its sealed writes are by, and clears the database's tenant context after
    the response, whatever the view did."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id_for(request)
        # Left set until the response is finished (logs.forget_request), so Django's own request
        # log lines, written after the middleware returns, carry it too.
        logs.request_id.set(request.request_id)
        try:
            with acting_as(lambda: writer_of(request)):
                response = self.get_response(request)
        finally:
            clear_tenant()
        response["X-Request-ID"] = request.request_id
        return response


def client_ip(request) -> str:
    """The client's address: REMOTE_ADDR, or, behind TRUSTED_PROXY_COUNT proxies, the address the
    outermost trusted proxy saw (X-Forwarded-For read from the right, so a client cannot forge it)."""
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    if proxies and len(forwarded) >= proxies:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "")
