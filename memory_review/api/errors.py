"""Every failure under /api/ is JSON, whatever raised it: an unknown URL, a wrong method, a body
over the size limit, a crash. An agent parses the answer; an HTML page would only confuse it."""

from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse

API_PREFIX = "/api/"


def too_big() -> JsonResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return JsonResponse(
        {"error": f"request body too large: the limit is {limit} bytes", "fields": {"body": "too large"}},
        status=413,
    )


class JsonErrorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        return self._as_json(request, response)

    def process_exception(self, request, exception):
        if request.path.startswith(API_PREFIX) and isinstance(exception, RequestDataTooBig):
            return too_big()
        return None

    @staticmethod
    def _as_json(request, response) -> JsonResponse:
        status = response.status_code
        try:
            phrase = HTTPStatus(status).phrase.lower()
        except ValueError:  # a status with no standard phrase
            phrase = "error"
        body = {"error": phrase}
        if status == 405 and response.has_header("Allow"):
            body["allowed_methods"] = [m.strip() for m in response["Allow"].split(",")]
        if status >= 500:
            body["request_id"] = getattr(request, "request_id", None)
        replacement = JsonResponse(body, status=status)
        for header in ("Allow", "Retry-After", "WWW-Authenticate", "X-Request-ID"):
            if response.has_header(header):
                replacement[header] = response[header]
        return replacement
