"""gunicorn as shipped: the Dockerfile, docker-compose.yml and docs/deploy.md all start the web
app with this file (`gunicorn -c memory_review/gunicorn_conf.py`, from the repository's root);
every knob has an environment variable. It lives beside wsgi.py, the app it serves.

Threaded workers (`gthread`), so a long download finishes. A sync worker answers one request at
a time and tells the arbiter it is alive only between requests: a streamed export longer than
`timeout` (30 s: about 800,000 audit rows) was killed mid-stream. A gthread worker's main loop
beats the arbiter's heartbeat about once a second while its threads serve requests, so
`timeout` watches for a stuck process, not for a long request (gunicorn's documentation of
`timeout`: "For the non sync workers it just means that the worker process is still
communicating and is not tied to the length of time required to handle a single request").
tests/web/test_gunicorn_timeout.py streams an export for longer than a short timeout through
this file, and shows the sync worker cutting the same download off.

Each thread holds its own database connection: WEB_CONCURRENCY x WEB_THREADS connections at most
per host (24 with the defaults), within PostgreSQL's default 100 and an Oracle pool's size.

The access log (off unless WEB_ACCESS_LOG names a file, `-` for standard output) writes each
request's path, never its query string or referrer: search words and the agents' user ids travel
there, and an erasure cannot reach a log line (docs/deploy.md). Its lines keep the combined log
format's fields, so log tools still read them.
"""

import logging
import os

wsgi_app = "memory_review.wsgi:application"
bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))  # processes; gunicorn's own variable
threads = int(os.environ.get("WEB_THREADS", "8"))  # requests each process serves at once
# A process silent this long (its heartbeat stopped: stuck, not busy) is killed and replaced.
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
# On a restart, requests in flight (a download, a long poll) get this long to finish.
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "60"))
keepalive = int(os.environ.get("WEB_KEEPALIVE", "5"))  # seconds an idle kept-alive connection waits

accesslog = os.environ.get("WEB_ACCESS_LOG") or None
# gunicorn's default has %(r)s (the request line, query included) and %(f)s (the referrer, which
# holds the previous page's query); the user is a Basic-auth name the app never asks for.
access_log_format = '%(h)s - - %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "-" "%(a)s"'


def post_fork(server, worker):
    """A request gunicorn itself fails to handle is logged with its URI: the path only, here too."""
    from memory_review.ops.logs import WithoutQueryStrings

    logging.getLogger("gunicorn.error").addFilter(WithoutQueryStrings())
