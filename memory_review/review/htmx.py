"""`request.htmx`, and `Vary: HX-Request` on every response that looked at it.

A screen that answers an htmx request with a fragment and a plain one with the whole page must
say so, or a browser or proxy cache hands the fragment to a person who asked for the page.
"""

from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails


class _TrackedHtmxDetails(HtmxDetails):
    consulted = False

    def __bool__(self) -> bool:
        self.consulted = True
        return super().__bool__()


class HtmxVaryMiddleware:
    """django-htmx's HtmxMiddleware, plus the Vary header when the view (or its template) asked
    whether the request came from htmx."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.htmx = details = _TrackedHtmxDetails(request)
        response = self.get_response(request)
        if details.consulted:
            patch_vary_headers(response, ("HX-Request",))
        return response
