"""Probes and metrics for compose and orchestrators.

* /healthz: the process answers (liveness). Touches nothing else, so a slow database never
  gets a healthy web process restarted.
* /readyz: the database, the broker (Redis) and Jev each answer (readiness); 503 naming what
  does not, so traffic goes elsewhere until it does.
* /metrics: Prometheus text format. Counts of tenants' data: only from this host (loopback) or
  with `Authorization: Bearer METRICS_TOKEN`.
"""

import hmac
import ipaddress
import logging
import os
import time

import httpx
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client import REGISTRY as PROCESS_REGISTRY

from memory_review.assessments.jev import uses_standin

from .collectors import DomainCollector

TYPESAFE_DEFAULT_BASE_URL = "https://api.typesafe.ai"
logger = logging.getLogger(__name__)


@require_GET
@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": "ok"})


# An anonymous probe says what is down, by name, never the exception's text (hosts, DSNs):
# the log has that.
def _down(what: str, exc: Exception) -> str:
    logger.warning("readiness: %s is down", what, exc_info=exc)
    return f"unreachable ({type(exc).__name__})"


def _database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1" + (" FROM DUAL" if connection.vendor == "oracle" else ""))
            cursor.fetchone()
    except Exception as exc:
        return _down("the database", exc)
    return None


def _broker() -> str | None:
    url = settings.CELERY_BROKER_URL
    if url.startswith("memory://"):  # in-process (the test suite's)
        return None
    if url.startswith("filesystem://"):
        folder = settings.VAR_DIR / "broker"
        return None if os.access(folder, os.W_OK) else f"the file broker's folder {folder} is not writable"
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1).ping()
    except Exception as exc:
        return _down("the broker", exc)
    return None


def _jev() -> str | None:
    """Reachable: any HTTP answer from Jev's base URL (or the stand-in's) within two seconds."""
    url = (
        settings.JEV_STANDIN_URL
        if uses_standin()
        else (settings.TYPESAFE_BASE_URL or TYPESAFE_DEFAULT_BASE_URL)
    )
    try:
        httpx.get(url, timeout=2.0)
    except httpx.HTTPError as exc:
        return _down(f"Jev ({url})", exc)
    return None


_jev_seen: dict = {"at": None, "problem": None}


def _jev_cached() -> str | None:
    """Probes come often: Jev is asked at most every JEV_READY_CACHE_S seconds a process."""
    now = time.monotonic()
    if _jev_seen["at"] is None or now - _jev_seen["at"] >= settings.JEV_READY_CACHE_S:
        _jev_seen.update(at=now, problem=_jev())
    return _jev_seen["problem"]


@require_GET
@never_cache
def readyz(request: HttpRequest) -> HttpResponse:
    problems = {"database": _database(), "broker": _broker(), "jev": _jev_cached()}
    body = {name: problem or "ok" for name, problem in problems.items()}
    ready = not any(problems.values())
    return JsonResponse({"status": "ready" if ready else "not ready", **body}, status=200 if ready else 503)


def _may_scrape(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(header.encode(), f"Bearer {token}".encode()):
        return True
    # Loopback is this host, unless a proxy on this host forwarded the request: then it is anyone.
    forwarded = "HTTP_X_FORWARDED_FOR" in request.META or "HTTP_FORWARDED" in request.META
    if settings.TRUSTED_PROXY_COUNT or forwarded:
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


@require_GET
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if not _may_scrape(request):
        return JsonResponse({"error": "metrics are for this host or a bearer METRICS_TOKEN"}, status=403)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # every process's counts, added up
        from prometheus_client import multiprocess

        counted = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted)
    else:
        counted = PROCESS_REGISTRY
    state = CollectorRegistry()
    state.register(DomainCollector())
    return HttpResponse(generate_latest(counted) + generate_latest(state), content_type=CONTENT_TYPE_LATEST)
