"""One env-driven settings module. Every knob has an environment variable and a local default.

Databases, in order of precedence:
* Oracle when ORACLE_DSN is set (thin mode, python-oracledb);
* whatever DATABASE_URL names (e.g. postgres://127.0.0.1:5432/test);
* SQLite under var/ otherwise.
"""

import base64
import hashlib
import json
import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


def env_secret(name: str, default: str = "") -> str:
    """NAME, or the contents of the file NAME_FILE names (a Docker or Kubernetes secret)."""
    if os.environ.get(name):
        return os.environ[name]
    if os.environ.get(f"{name}_FILE"):
        return Path(os.environ[f"{name}_FILE"]).read_text().strip()
    return default


# Off unless asked for: a debug page shows the environment, and the API's shows bearer tokens.
DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    key = env_secret("SECRET_KEY")
    if not key and (VAR_DIR / "secret-key").is_file():  # written by `make demo`, never committed
        key = (VAR_DIR / "secret-key").read_text().strip()
    if not key:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY (or SECRET_KEY_FILE, a file holding it) to a long "
            "random value, e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'; "
            "`make demo` writes one to var/secret-key."
        )
    return key


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")

# HTTPS. HTTPS=true (served over TLS, directly or behind a proxy) turns every protection on;
# each has its own variable too. docs/deploy.md lists the production settings.
HTTPS = env_bool("HTTPS", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", HTTPS)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]  # probes speak plain HTTP inside the cluster
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", HTTPS)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", HTTPS)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips any the client sent).
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
USE_X_FORWARDED_HOST = env_bool("USE_X_FORWARDED_HOST", False)
# How many proxies append to X-Forwarded-For in front of the app (0: the client connects directly).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 12 * 3600)  # a working day, then log in again
X_FRAME_OPTIONS = "DENY"


def _style_hashes(*templates: str) -> list[str]:
    """CSP source expressions for the <style> blocks of pages that must not depend on static
    files (the 500 page: the failure may be the static files)."""
    found = []
    for name in templates:
        page = (BASE_DIR / "templates" / name).read_text()
        for block in re.findall(r"<style>(.*?)</style>", page, flags=re.S):
            digest = base64.b64encode(hashlib.sha256(block.encode()).digest()).decode()
            found.append(f"'sha256-{digest}'")
    return found


# Content-Security-Policy: scripts only from this origin, none inline; styles too, but for the
# 500 page's own <style> block, allowed by its hash (tests/web/test_safe_defaults.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, *_style_hashes("500.html")],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",  # runserver leaves static files to WhiteNoise, as production
    "django.contrib.staticfiles",
    "axes",
    "django_htmx",
    "template_partials",
    "memory_review.tenancy",
    "memory_review.memories",
    "memory_review.assessments",
    "memory_review.audit",
    "memory_review.calibration",
    "memory_review.compliance",
    "memory_review.workflow",
    "memory_review.agents",
    "memory_review.jobfiles",
    "memory_review.quality",
    "memory_review.review",
    "memory_review.demo",
    "memory_review.oracle",
    "memory_review.api",
]

MIDDLEWARE = [
    "memory_review.health.probes.ProbeMiddleware",  # /healthz, /readyz: before the Host header is checked
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memory_review.ops.middleware.RequestContextMiddleware",
    "memory_review.api.errors.JsonErrorsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memory_review.review.htmx.HtmxVaryMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memory_review.urls"
WSGI_APPLICATION = "memory_review.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memory_review.review.context.jev_mode",
            ],
        },
    },
]


# Each web thread and worker process keeps its database connection this many seconds (0: a new
# one per request or task; an Oracle or TLS connect costs far more than a query). With health
# checks on, a kept connection is tried before a request reuses it (one round trip), so one the
# database or a firewall dropped is replaced rather than failing that request.
CONN_MAX_AGE = env_int("CONN_MAX_AGE", 60)
CONN_HEALTH_CHECKS = env_bool("CONN_HEALTH_CHECKS", False)
# PostgreSQL's JIT compiles a query whose estimated cost passes jit_above_cost. The app's queries
# are short: a page whose row estimate was far off (the audit trail by a common subject) paid
# 550 ms of compiling for 11 ms of work. Off for the app's connections unless this says otherwise.
POSTGRES_JIT = env_bool("POSTGRES_JIT", False)


def _database() -> dict:
    if os.environ.get("ORACLE_DSN"):
        return {
            "ENGINE": "django.db.backends.oracle",
            "NAME": os.environ["ORACLE_DSN"],  # host:port/service, thin mode
            "USER": os.environ.get("ORACLE_USER", "memory_app"),
            "PASSWORD": env_secret("ORACLE_PASSWORD"),
            "OPTIONS": {},
            "CONN_MAX_AGE": CONN_MAX_AGE,
            "CONN_HEALTH_CHECKS": CONN_HEALTH_CHECKS,
        }
    if os.environ.get("DATABASE_URL"):
        config = dj_database_url.parse(
            os.environ["DATABASE_URL"], conn_max_age=CONN_MAX_AGE, conn_health_checks=CONN_HEALTH_CHECKS
        )
        if "postgresql" in config["ENGINE"] and not POSTGRES_JIT:
            options = config.setdefault("OPTIONS", {})
            options["options"] = f"{options.get('options', '')} -c jit=off".strip()
        return config
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SQLITE_PATH", VAR_DIR / "memory_review.sqlite3"),
        # WAL lets the web server read while the worker writes; IMMEDIATE takes the write lock
        # up front, so two writers queue instead of failing with "database is locked".
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


DATABASES = {"default": _database()}
# Oracle: the schema that owns the tables, when the app connects as a user that does not.
ORACLE_SCHEMA = os.environ.get("ORACLE_SCHEMA") or None
# The app user's password, for `manage.py oracle_check` run as the owner (it logs in as both).
ORACLE_APP_PASSWORD = env_secret("ORACLE_APP_PASSWORD")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
# Login throttling (django-axes) on the app's and the admin's login: after LOGIN_FAILURE_LIMIT
# wrong passwords for one user from one address, that pair is refused (429) for
# LOGIN_LOCKOUT_MINUTES, right password or not.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_LOCKOUT_CALLABLE = "memory_review.review.views.login.locked_out"
AXES_CLIENT_IP_CALLABLE = "memory_review.ops.middleware.client_ip"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or VAR_DIR / "staticfiles")
# WhiteNoise serves the collected files (`collectstatic`) with far-future caching: every name
# carries its content's hash. The demo collects them too, so it runs with DEBUG off.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Every record carries its request id, tenant and assessment (memory_review/ops/logs.py);
# LOG_FORMAT=json writes one JSON object a line, for a log pipeline.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "context": {"()": "memory_review.ops.logs.ContextFilter"},
        "without_query_strings": {"()": "memory_review.ops.logs.WithoutQueryStrings"},
        "refusals_without_traceback": {"()": "memory_review.ops.logs.RefusalsWithoutTraceback"},
    },
    "formatters": {
        "text": {
            "format": "%(asctime)s %(levelname)s %(name)s [req=%(request_id)s tenant=%(tenant_id)s "
            "assessment=%(assessment_id)s] %(message)s"
        },
        "json": {"()": "memory_review.ops.logs.JsonFormatter"},
        # Django's own, for runserver's request lines.
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["context"],
            "formatter": "json" if LOG_FORMAT == "json" else "text",
        },
        "django.server": {"class": "logging.StreamHandler", "formatter": "django.server"},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # One line per HTTP request to Jev is noise; failures surface on the assessment.
        **{name: {"level": "WARNING"} for name in ("httpx", "httpx2", "typesafe_sdk")},
        # A refused page (403, 404) is one line at WARNING, without a traceback; errors keep theirs.
        "django.request": {"filters": ["refusals_without_traceback"]},
        # runserver's access log (`make demo`), as Django sets it up, but without query strings:
        # search words and user ids there are out of an erasure's reach (docs/deploy.md).
        "django.server": {
            "handlers": ["django.server"],
            "filters": ["without_query_strings"],
            "level": "INFO",
            "propagate": False,
        },
    },
}

# Oracle has no partial indexes: the live-subject rule is a function-based index in sql/,
# and nulls_distinct is a PostgreSQL 15+ feature that the other backends cannot express.
SILENCED_SYSTEM_CHECKS = ["models.W047"]

# Celery: Redis as broker. A task is acknowledged after it ran, so a worker that dies mid-task
# hands it back; one task at a time per worker process, so a redelivery waits for nobody.
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
# The shared cache (the API's rate limit): Redis; CACHE_URL=locmem:// for one process alone
# (`make demo` without Redis). Room for more than locmem's default 300 keys: the sampled audits'
# figures keep a few small ones for each stratum of each sample a page shows (quality/results.py).
_cache_url = os.environ.get("CACHE_URL", REDIS_URL)
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 50_000}}
        if _cache_url.startswith("locmem://")
        else {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _cache_url,
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "memory-review"),
        }
    )
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = env_int("CELERY_WORKER_PREFETCH_MULTIPLIER", 1)
# Pool processes a worker runs (`--concurrency` on its command line wins). Each judges one event at
# a time and spends most of it waiting on Jev, so more than one a core pays (BENCHMARKS.md, "Event
# throughput"); unset, Celery starts one a core.
CELERY_WORKER_CONCURRENCY = env_int("CELERY_WORKER_CONCURRENCY", 0) or None
# Celery's pool (`--pool` on its command line wins): `prefork`, processes, each judging one event
# at a time; or `threads`, one process judging CELERY_WORKER_CONCURRENCY events at once, each
# mostly waiting on Jev, for one process's memory (issue 30; BENCHMARKS.md, "Event throughput").
# Run two threads workers a core (docs/deploy.md, "Processes or threads").
CELERY_WORKER_POOL = os.environ.get("CELERY_WORKER_POOL", "prefork")
if CELERY_WORKER_POOL not in {"prefork", "threads", "solo"}:
    raise ImproperlyConfigured(f"CELERY_WORKER_POOL is prefork, threads or solo, not {CELERY_WORKER_POOL!r}")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Celery's Django fixup closes every database connection before and after each task, whatever
# CONN_MAX_AGE says (celery#4116; its support for CONN_MAX_AGE was reverted in 5.5, celery#9824):
# each task would connect anew, a PostgreSQL backend forked and its catalog caches filled for
# every event judged and every sequencer run. Its own knob, "close every N tasks", is set out of
# reach here, and memory_review/celery.py closes connections around each task as Django does
# around each request (close_old_connections: past CONN_MAX_AGE, or unusable after an error).
CELERY_DB_REUSE_MAX = 2**62
# Webhook tries wait on other people's servers: they have a queue of their own, so a slow receiver
# never delays a judgment. A worker started without -Q takes every queue (one host, the tests);
# production runs `-Q celery` and `-Q webhooks` workers apart (docs/deploy.md).
# Events' assessments wait in lanes, a tenant's always in the same one (its id modulo
# ASSESSMENT_LANES); a worker takes from its queues in turn, so one tenant's burst fills its own
# lane, not the queue every tenant waits in. The lanes go with `celery`: a worker that takes it
# takes them all (memory_review/celery.py), one that does not (`-Q webhooks`, `-X celery`) none.
# 0 or 1: every event in `celery`, first come first served.
ASSESSMENT_LANES = env_int("ASSESSMENT_LANES", 8)
if ASSESSMENT_LANES < 0:
    raise ImproperlyConfigured(f"ASSESSMENT_LANES is {ASSESSMENT_LANES}: it must be 0 or more")
ASSESSMENT_LANE_QUEUES = tuple(f"events-{n}" for n in range(ASSESSMENT_LANES)) if ASSESSMENT_LANES > 1 else ()
CELERY_TASK_QUEUES = (Queue("celery", routing_key="celery"), Queue("webhooks", routing_key="webhooks"))
CELERY_TASK_ROUTES = {"memory_review.agents.tasks.deliver": {"queue": "webhooks"}}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING too, with their context
# A task whose worker died unacknowledged goes back to the queue once it has been out for
# CELERY_VISIBILITY_TIMEOUT seconds (longer than any assessment runs); workers look for such
# tasks every CELERY_RESTORE_INTERVAL seconds.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 600),
    "unacked_restore_interval": env_int("CELERY_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": 1,
}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # The broker that needs no server: `make demo` falls back to it when Redis is unreachable.
    _broker_dir = str(VAR_DIR / "broker")
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": _broker_dir,
        "data_folder_out": _broker_dir,
        "control_folder": str(VAR_DIR / "broker" / "control"),  # not the working directory
    }


# Jev (TypeSafe System One). With no API key, the same SDK talks to the offline stand-in.
TYPESAFE_API_KEY = env_secret("TYPESAFE_API_KEY")
TYPESAFE_BASE_URL = os.environ.get("TYPESAFE_BASE_URL") or None
JEV_STANDIN_URL = os.environ.get("JEV_STANDIN_URL", "http://127.0.0.1:8765")
JEV_MODEL = os.environ.get("JEV_MODEL", "jev-1.13.0")
JEV_USD_PER_MILLION_INPUT = env_float("JEV_USD_PER_MILLION_INPUT", 0.042)
JEV_TIMEOUT_S = env_float("JEV_TIMEOUT_S", 10.0)
JEV_MAX_TRIES = env_int("JEV_MAX_TRIES", 4)
JEV_BACKOFF_S = env_float("JEV_BACKOFF_S", 0.5)
JEV_BACKOFF_MAX_S = env_float("JEV_BACKOFF_MAX_S", 8.0)
JEV_RETRY_AFTER_MAX_S = env_float("JEV_RETRY_AFTER_MAX_S", 30.0)
# How long an agent's memory write waits for Jev's instruction vote (one try) before it goes into
# force on the rules alone and a worker asks instead (assessments/screening.py).
SCREEN_INLINE_TIMEOUT_S = env_float("SCREEN_INLINE_TIMEOUT_S", 2.0)
# A vote still owed whose last try is this old (a lost task, or one out of tries) is queued again
# by a sweep every SCREEN_SWEEP_SECONDS; above the task's longest wait between tries (300 s).
SCREEN_SWEEP_AFTER_S = env_float("SCREEN_SWEEP_AFTER_S", 600.0)
SCREEN_SWEEP_SECONDS = env_float("SCREEN_SWEEP_SECONDS", 300.0)
# A worker renews its lease on an assessment every third of this while it lives; the reaper hands
# one whose lease lapsed to another worker (assessments/leases.py, recovery.py).
ASSESSMENT_LEASE_S = env_float("ASSESSMENT_LEASE_S", 30.0)
ASSESSMENT_REAP_SECONDS = env_float("ASSESSMENT_REAP_SECONDS", 15.0)
ASSESSMENT_REAPER_LIMIT = env_int("ASSESSMENT_REAPER_LIMIT", 3)  # then failed, for a lead to look at
ASSESSMENT_QUEUED_STALE_MINUTES = env_int("ASSESSMENT_QUEUED_STALE_MINUTES", 10)  # then sent again
JEV_MAX_CONCURRENCY = env_int("JEV_MAX_CONCURRENCY", 32)
JEV_REQUESTS_PER_MINUTE = env_int("JEV_REQUESTS_PER_MINUTE", 1200)
# Jev counts a key's requests over every process of every host. Set to the key's budget, every
# process takes from one budget in Redis (REDIS_URL) before each request, and
# JEV_REQUESTS_PER_MINUTE counts only while Redis cannot be reached. 0: each process its own.
JEV_SHARED_REQUESTS_PER_MINUTE = env_int("JEV_SHARED_REQUESTS_PER_MINUTE", 0)
# Invalidation batching (DESIGN §4, seeds/003).
JEV_SCREEN_ABOVE = env_int("JEV_SCREEN_ABOVE", 200)
JEV_BATCH_SIZE = env_int("JEV_BATCH_SIZE", 20)
JEV_SCREEN_BATCH_SIZE = env_int("JEV_SCREEN_BATCH_SIZE", 100)
JEV_REQUEST_TOKENS = env_int("JEV_REQUEST_TOKENS", 64_000)
JEV_STATE_TOKENS = env_int("JEV_STATE_TOKENS", 32_000)

# The agents' API.
API_MAX_TEXT_CHARS = env_int("API_MAX_TEXT_CHARS", 20_000)
# /metrics answers this host (loopback) and, when set, `Authorization: Bearer METRICS_TOKEN`.
METRICS_TOKEN = env_secret("METRICS_TOKEN")
JEV_READY_CACHE_S = env_float("JEV_READY_CACHE_S", 10.0)  # /readyz asks Jev at most this often
API_RATE_PER_MINUTE = env_int("API_RATE_PER_MINUTE", 300)  # per token; 0 turns the limit off
# Long polls (GET changes with `wait`) each hold a web thread: at most this many open per token
# (all processes together), and per process, by default half its threads (api/long_polls.py).
API_LONG_POLLS_PER_TOKEN = env_int("API_LONG_POLLS_PER_TOKEN", 2)
API_LONG_POLLS_PER_PROCESS = env_int("API_LONG_POLLS_PER_PROCESS", max(1, env_int("WEB_THREADS", 8) // 2))
if API_LONG_POLLS_PER_TOKEN < 1 or API_LONG_POLLS_PER_PROCESS < 1:
    raise ImproperlyConfigured("API_LONG_POLLS_PER_TOKEN and API_LONG_POLLS_PER_PROCESS are 1 or more")

# The audit trail (docs/audit.md). Keys never live in the database: AUDIT_KEY (hex) with
# AUDIT_KEY_ID, or AUDIT_KEY_FILE (JSON, rotatable); the demo creates var/audit-key.json.
AUDIT_KEY = os.environ.get("AUDIT_KEY", "")  # not env_secret: AUDIT_KEY_FILE is the JSON key file
AUDIT_KEY_ID = os.environ.get("AUDIT_KEY_ID", "k1")
AUDIT_KEY_FILE = os.environ.get("AUDIT_KEY_FILE") or str(VAR_DIR / "audit-key.json")
# "Verify now" runs in a worker, which reports every 5,000 rows; one silent AUDIT_VERIFY_LEASE_SECONDS
# is taken over by the task the broker hands back, and after AUDIT_VERIFY_LOST_SECONDS the page
# says it stopped and lets a person ask again (a check between reports can take a while).
AUDIT_VERIFY_LEASE_SECONDS = env_int("AUDIT_VERIFY_LEASE_SECONDS", 120)
AUDIT_VERIFY_LOST_SECONDS = env_int("AUDIT_VERIFY_LOST_SECONDS", 900)
# Signed checkpoints of each chain's head, written outside the database (append-only files).
AUDIT_CHECKPOINT_DIR = os.environ.get("AUDIT_CHECKPOINT_DIR") or str(VAR_DIR / "audit-checkpoints")
AUDIT_CHECKPOINT_MINUTES = env_int("AUDIT_CHECKPOINT_MINUTES", 10)
# Sequencing (docs/audit.md, "Sequencing"). `deferred` (the default): writers add audit rows with
# no position and lock nothing a tenant shares, and one sequencer run a tenant at a time (queued
# when a write commits, on any worker; beat sweeps for a lost one) links the committed ones, so a
# tenant's writes grow with its workers and hosts. `inline`: each writer links its rows as it
# writes them, holding the tenant's chain head until it commits: a tenant stops at what that one
# row allows (BENCHMARKS.md, "Fewer statements an event, and eight processes"); for a process
# with no worker beside it (seed_demo, bench/throwaway.py, the tests).
AUDIT_SEQUENCER = os.environ.get("AUDIT_SEQUENCER", "deferred")
if AUDIT_SEQUENCER not in ("deferred", "inline"):
    raise ImproperlyConfigured(f"AUDIT_SEQUENCER is {AUDIT_SEQUENCER!r}: it must be deferred or inline")
AUDIT_SEQUENCE_FLAG_SECONDS = env_int("AUDIT_SEQUENCE_FLAG_SECONDS", 30)  # a lost run's flag lapses
# A run is queued this long after the commit that asks for it, so one run links many commits' rows:
# the agents' feed hears a change this much later, and the sequencer's cost an event falls.
AUDIT_SEQUENCE_DELAY_MS = env_int("AUDIT_SEQUENCE_DELAY_MS", 200)
AUDIT_SEQUENCE_SWEEP_SECONDS = env_float("AUDIT_SEQUENCE_SWEEP_SECONDS", 5.0)  # beat links what nudges missed
# A row waiting longer than this for its position is reported by verify_audit (the sequencer is
# stopped, or refused a row changed while it waited).
AUDIT_SEQUENCE_BOUND_SECONDS = env_int("AUDIT_SEQUENCE_BOUND_SECONDS", 300)
# A command given each new checkpoint line on its standard input (CHECKPOINT_TENANT names the
# tenant), to keep a copy where the database's administrators cannot write: an object-locked
# bucket, another host, an append-only log (docs/audit.md, "Where checkpoints are kept").
AUDIT_CHECKPOINT_COPY_COMMAND = os.environ.get("AUDIT_CHECKPOINT_COPY_COMMAND", "")
AUDIT_CHECKPOINT_COPY_TIMEOUT_S = env_float("AUDIT_CHECKPOINT_COPY_TIMEOUT_S", 30.0)
# The hard-TTL sweep: memories past valid_until expire within this many seconds, event or not.
TTL_SWEEP_SECONDS = env_float("TTL_SWEEP_SECONDS", 30.0)
# Webhooks (agents/webhooks.py). A delivery is posted when its change commits; a failed one is
# tried again after each of these delays in turn (seconds: the last try lands just under 24 h
# after the first), then given up. The sweep, every WEBHOOK_SWEEP_SECONDS, sends what is due.
WEBHOOK_RETRY_SECONDS = [
    float(delay)
    for delay in env_list("WEBHOOK_RETRY_SECONDS", "5,30,120,600,1800,3600,7200,14400,28800,28800")
]
WEBHOOK_TIMEOUT_S = env_float("WEBHOOK_TIMEOUT_S", 10.0)  # each step of a try: connect, send, a read
# The whole try, all its steps together: a receiver that trickles its answer is cut off here, so
# it holds a worker this long at most (agents/webhooks.py post()).
WEBHOOK_DEADLINE_S = env_float("WEBHOOK_DEADLINE_S", 15.0)
if not WEBHOOK_DEADLINE_S > 0:
    raise ImproperlyConfigured(f"WEBHOOK_DEADLINE_S is seconds above 0, not {WEBHOOK_DEADLINE_S}")
# Tries in flight at once to one endpoint, once it has answered within the deadline; until then,
# and again after a try runs out of time, one. Below the webhook worker's processes, a receiver
# that turns slow leaves the others some.
WEBHOOK_TRIES_AT_ONCE = env_int("WEBHOOK_TRIES_AT_ONCE", 2)
if WEBHOOK_TRIES_AT_ONCE < 1:
    raise ImproperlyConfigured(f"WEBHOOK_TRIES_AT_ONCE is 1 or more, not {WEBHOOK_TRIES_AT_ONCE}")
WEBHOOK_SWEEP_SECONDS = env_float("WEBHOOK_SWEEP_SECONDS", 5.0)
# A first try not started this long after its change is taken as lost (a broker restart, a worker
# killed holding it) and queued again by the sweep; the lease keeps two workers off one delivery.
WEBHOOK_LOST_AFTER_SECONDS = env_float("WEBHOOK_LOST_AFTER_SECONDS", 60.0)
# An endpoint is disabled (and its admins told) once this many tries in a row failed over at
# least this many hours; an admin enables it again and what waited is sent.
WEBHOOK_DISABLE_AFTER_FAILURES = env_int("WEBHOOK_DISABLE_AFTER_FAILURES", 10)
WEBHOOK_DISABLE_AFTER_HOURS = env_float("WEBHOOK_DISABLE_AFTER_HOURS", 12.0)
# Targets on loopback, link-local, private or reserved addresses are refused (a webhook must not
# reach into this network) unless inside one of these networks, e.g. "127.0.0.0/8,10.1.2.0/24".
WEBHOOK_ALLOW_NETWORKS = env_list("WEBHOOK_ALLOW_NETWORKS")
# Derived figures (calibration/figures.py): computed in the request below this many memories,
# else by a job and kept in the cache; beat refreshes the standing ones whose data moved.
FIGURES_INLINE_BELOW = env_int("FIGURES_INLINE_BELOW", 20_000)
FIGURES_REFRESH_SECONDS = env_float("FIGURES_REFRESH_SECONDS", 120.0)
FIGURES_JOB_SECONDS = env_int("FIGURES_JOB_SECONDS", 900)  # a job's lock lapses after this
FIGURES_KEEP_SECONDS = env_int("FIGURES_KEEP_SECONDS", 7 * 24 * 3600)
CELERY_BEAT_SCHEDULE = {
    "audit-sequence-sweep": {
        "task": "memory_review.audit.tasks.sequence_waiting",
        "schedule": AUDIT_SEQUENCE_SWEEP_SECONDS,
        "options": {"expires": AUDIT_SEQUENCE_SWEEP_SECONDS},
    },
    "audit-checkpoints": {
        "task": "memory_review.audit.tasks.checkpoint_all",
        "schedule": AUDIT_CHECKPOINT_MINUTES * 60.0,
    },
    "assessment-lease-reaper": {
        "task": "memory_review.assessments.tasks.reap_lapsed_leases",
        "schedule": ASSESSMENT_REAP_SECONDS,
        "options": {"expires": ASSESSMENT_REAP_SECONDS},  # a backlog of reaps is worth one
    },
    "screening-sweep": {
        "task": "memory_review.assessments.tasks.sweep_screenings",
        "schedule": SCREEN_SWEEP_SECONDS,
        "options": {"expires": SCREEN_SWEEP_SECONDS},
    },
    "hard-ttl-sweep": {
        "task": "memory_review.memories.tasks.expire_past_ttl",
        "schedule": TTL_SWEEP_SECONDS,
        "options": {"expires": TTL_SWEEP_SECONDS},
    },
    "figures-refresh": {
        "task": "memory_review.calibration.tasks.refresh_stale_figures",
        "schedule": FIGURES_REFRESH_SECONDS,
        "options": {"expires": FIGURES_REFRESH_SECONDS},
    },
    "webhook-sweep": {
        "task": "memory_review.agents.tasks.sweep_webhooks",
        "schedule": WEBHOOK_SWEEP_SECONDS,
        "options": {"expires": WEBHOOK_SWEEP_SECONDS},
    },
}

# The review workspace.
REVIEW_CLAIM_MINUTES = env_int("REVIEW_CLAIM_MINUTES", 15)  # a claim lapses unless its page renews it
REVIEW_BULK_MAX = env_int("REVIEW_BULK_MAX", 500)  # the most memories one bulk action moves
REVIEW_UNDO_SECONDS = env_int("REVIEW_UNDO_SECONDS", 120)  # how long `u` can take a decision back
REVIEW_TARGET_HOURS = env_int("REVIEW_TARGET_HOURS", 24)  # an item waiting longer is marked late

# Files produced by jobs (memory_review/jobfiles): an export asked for on a page streams at once
# up to EXPORT_JOB_ABOVE_ROWS rows; above it a Celery worker writes the file and the page follows
# its progress (a GET of an export URL streams whatever its size, for scripts). The files go to
# the `jobfiles` storage: a folder by default (JOB_FILES_DIR, which web and workers on separate
# hosts must share as a volume), or any Django storage, e.g. S3 through django-storages:
# JOB_FILES_STORAGE=storages.backends.s3.S3Storage and JOB_FILES_STORAGE_OPTIONS='{"bucket_name": ..}'.
EXPORT_JOB_ABOVE_ROWS = env_int("EXPORT_JOB_ABOVE_ROWS", 100_000)
JOB_FILES_DIR = Path(os.environ.get("JOB_FILES_DIR") or VAR_DIR / "jobfiles")
JOB_FILES_STORAGE = os.environ.get("JOB_FILES_STORAGE", "django.core.files.storage.FileSystemStorage")
_job_files_in_a_folder = JOB_FILES_STORAGE.endswith("FileSystemStorage")
_job_files_folder = {"location": str(JOB_FILES_DIR)} if _job_files_in_a_folder else {}
STORAGES["jobfiles"] = {
    "BACKEND": JOB_FILES_STORAGE,
    "OPTIONS": json.loads(os.environ.get("JOB_FILES_STORAGE_OPTIONS") or "null") or _job_files_folder,
}
JOB_FILES_KEEP_HOURS = env_float("JOB_FILES_KEEP_HOURS", 24.0)  # then the file is removed, its record kept
JOB_FILES_SWEEP_SECONDS = env_float("JOB_FILES_SWEEP_SECONDS", 300.0)
# A worker writing a file reports every second; one silent this long has died, and the task the
# broker hands back takes the job over; silent this long, the sweep fails it for the person to ask again.
JOB_FILES_LEASE_SECONDS = env_int("JOB_FILES_LEASE_SECONDS", 60)
JOB_FILES_LOST_SECONDS = env_int("JOB_FILES_LOST_SECONDS", 900)
# Sampled audits (issue 31): each tenant's due draws, looked for every hour.
QUALITY_DRAW_CHECK_SECONDS = env_float("QUALITY_DRAW_CHECK_SECONDS", 3600.0)
CELERY_BEAT_SCHEDULE["quality-draws"] = {
    "task": "memory_review.quality.tasks.draw_due",
    "schedule": QUALITY_DRAW_CHECK_SECONDS,
    "options": {"expires": QUALITY_DRAW_CHECK_SECONDS},
}
CELERY_BEAT_SCHEDULE["job-files-sweep"] = {
    "task": "memory_review.jobfiles.tasks.sweep",
    "schedule": JOB_FILES_SWEEP_SECONDS,
    "options": {"expires": JOB_FILES_SWEEP_SECONDS},
}
