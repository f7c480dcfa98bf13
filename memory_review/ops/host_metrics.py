"""What a worker host counted, for Prometheus: the host's PROMETHEUS_MULTIPROC_DIR added up, served
on its own port (docs/deploy.md, "Web and workers on separate hosts").

A web host's `/metrics` adds up the counts of the processes on that host only; a worker host
serves no pages, so its counts (Jev requests, their cost and latency, transitions by the policy,
assessments finished) are read here:

    PROMETHEUS_MULTIPROC_DIR=/var/run/memory-review-metrics METRICS_TOKEN=... \\
        python -m memory_review.ops.host_metrics --bind 0.0.0.0:9108

It needs no database and no Django: only the directory the host's worker processes count into,
and the same rule as `/metrics`: a bearer METRICS_TOKEN, or a request from this host.
"""

import argparse
import hmac
import ipaddress
import os
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess


def app(environ, start_response):
    if environ.get("PATH_INFO") not in ("/metrics", "/"):
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]
    if not _may_scrape(environ):
        start_response("403 Forbidden", [("Content-Type", "text/plain")])
        return [b"metrics are for this host or a bearer METRICS_TOKEN\n"]
    counted = CollectorRegistry()
    multiprocess.MultiProcessCollector(counted)  # PROMETHEUS_MULTIPROC_DIR, read at each scrape
    start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
    return [generate_latest(counted)]


def _may_scrape(environ) -> bool:
    token = os.environ.get("METRICS_TOKEN", "")
    header = environ.get("HTTP_AUTHORIZATION", "")
    if token and hmac.compare_digest(header.encode(), f"Bearer {token}".encode()):
        return True
    if "HTTP_X_FORWARDED_FOR" in environ or "HTTP_FORWARDED" in environ:
        return False  # a proxy on this host forwarded it: it is anyone's
    try:
        return ipaddress.ip_address(environ.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):  # a scrape every few seconds is not news
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bind", default="127.0.0.1:9108", help="host:port")
    args = parser.parse_args(argv)
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        raise SystemExit("set PROMETHEUS_MULTIPROC_DIR to the directory this host's workers count into")
    host, port = args.bind.rsplit(":", 1)
    with make_server(host, int(port), app, server_class=WSGIServer, handler_class=_Quiet) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
