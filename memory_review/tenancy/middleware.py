import uuid

from django.conf import settings

from memory_review.ops import logs

from .db_context import clear_tenant


class RequestContextMiddleware:
    """Gives each request an id that audit rows record (X-Request-ID when a proxy set one), and
    clears the database's tenant context after the response, whatever the view did."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = (request.headers.get("X-Request-ID") or uuid.uuid4().hex)[:64]
        # Left set until the response is finished (logs.forget_request), so Django's own request
        # log lines, written after the middleware returns, carry it too.
        logs.request_id.set(request.request_id)
        try:
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
