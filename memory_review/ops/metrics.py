"""What happens, counted where it happens (prometheus_client). Below everything else: the
lifecycle and the Jev usage count here and import nothing back.

Each process counts its own; with PROMETHEUS_MULTIPROC_DIR set (a directory web and worker
processes share, emptied before they start) /metrics adds every process's counts up, the
convention for gunicorn and Celery on one host (docs/deploy.md). State (queues, assessments
by state) is read from the database at scrape time instead: health/collectors.py.
"""

import os
import socket

from prometheus_client import Counter, Histogram, values

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Each process's file is named by host and pid, not pid alone: containers sharing the
    # directory each have their own pid 1, 7, 8... and would otherwise write one another's files.
    values.ValueClass = values.MultiProcessValue(lambda: f"{socket.gethostname()}-{os.getpid()}")

JEV_REQUESTS = Counter(
    "memory_review_jev_requests", "Requests to Jev, by outcome (ok or failed).", ["outcome"]
)
JEV_RETRIES = Counter("memory_review_jev_retries", "Retries of requests to Jev (429, 5xx, timeouts).")
JEV_INPUT_TOKENS = Counter("memory_review_jev_input_tokens", "Input tokens sent to Jev.")
JEV_COST = Counter("memory_review_jev_cost_usd", "What Jev's requests cost, in US dollars.")
JEV_LATENCY = Histogram(
    "memory_review_jev_request_seconds",
    "One request to Jev, its retries included.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
TRANSITIONS = Counter(
    "memory_review_transitions", "Status changes written, by actor kind and action.", ["actor_kind", "action"]
)
ASSESSMENTS_FINISHED = Counter(
    "memory_review_assessments_finished", "Assessments finished, by purpose and state.", ["purpose", "state"]
)
ASSESSMENTS_RESTARTED = Counter(
    "memory_review_assessments_restarted", "Assessments handed to a worker again, by who.", ["by"]
)
