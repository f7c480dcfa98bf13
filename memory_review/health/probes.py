"""The probes, answered before anything reads the Host header.

Orchestrators and compose's healthcheck call /healthz and /readyz by the pod's address or
127.0.0.1, not by a name in ALLOWED_HOSTS; through the normal stack that is a 400
(DisallowedHost), and a healthy web server would be restarted for it. This middleware, first in
the list, answers the two paths itself; everything else goes on as usual."""

from . import views

PROBES = {"/healthz": views.healthz, "/readyz": views.readyz}


class ProbeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        probe = PROBES.get(request.path_info)
        if probe is not None:
            return probe(request)
        return self.get_response(request)
