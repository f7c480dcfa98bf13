"""A Redis database of a bench run's own (no Django here: the scripts choose it before their
settings load). Two runs on one database would take each other's tasks and empty each other's
queue: bench/throughput.py and bench/isolation.py run at once in the suite's check of the scripts."""

import atexit
import os

OWNER = "bench-run:owner"


def free_redis_database() -> str:
    """A Redis database of this run's own, emptied: the first of 13, then 11 down to 1, that no
    other run holds (12 is bench/audit_export.py's, 14 bench/webhooks.py's, 15 the tests').
    BENCH_BROKER_URL names one instead."""
    import redis

    if os.environ.get("BENCH_BROKER_URL"):
        return os.environ["BENCH_BROKER_URL"]
    for number in (13, *range(11, 0, -1)):
        url = f"redis://127.0.0.1:6379/{number}"
        held = redis.Redis.from_url(url)
        if held.set(OWNER, os.getpid(), nx=True, ex=24 * 3600):
            held.flushdb()  # what a run that died left behind
            held.set(OWNER, os.getpid(), ex=24 * 3600)
            atexit.register(_give_back, url, os.getpid())
            return url
    raise SystemExit("every Redis database from 1 to 13 but 12 is held by another run of a bench script")


def _give_back(url: str, pid: int) -> None:
    """The run's database is free for the next as the run ends (a run killed outright keeps it
    until its key lapses, a day on): only while it is still this run's."""
    if os.getpid() != pid:  # a forked child's exit: the run goes on
        return
    import redis

    try:
        held = redis.Redis.from_url(url)
        if held.get(OWNER) == str(pid).encode():
            held.delete(OWNER)
    except redis.RedisError:
        pass  # the key lapses on its own
