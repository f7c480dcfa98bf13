"""The knobs that move event throughput (BENCHMARKS.md, "Event throughput") reach what they
steer: Celery's pool and prefetch, and how long each process keeps its database connection."""

import json

from tests.web.test_safe_defaults import django_process

KEY = {"SECRET_KEY": "k" * 50}
WORKER = (
    "from memory_review.celery import app; import json; c = app.conf; "
    "print(json.dumps([c.worker_concurrency, c.worker_prefetch_multiplier, c.worker_pool]))"
)
DATABASE = (
    "from django.conf import settings; import json; d = settings.DATABASES['default']; "
    "print(json.dumps([d['ENGINE'].rsplit('.', 1)[-1], d['CONN_MAX_AGE'], d['CONN_HEALTH_CHECKS']]))"
)


def read(code: str, env: dict, tmp_path) -> list:
    result = django_process(code, {**KEY, **env}, tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_worker_runs_as_many_pool_processes_as_it_is_told(tmp_path):
    told = {"CELERY_WORKER_CONCURRENCY": "6", "CELERY_WORKER_PREFETCH_MULTIPLIER": "2"}

    assert read(WORKER, told, tmp_path) == [6, 2, "prefork"]
    assert read(WORKER, {}, tmp_path) == [None, 1, "prefork"]  # Celery's own: one a core; one task reserved


def test_a_worker_runs_the_pool_it_is_told_and_refuses_one_it_does_not_know(tmp_path):
    told = {"CELERY_WORKER_POOL": "threads", "CELERY_WORKER_CONCURRENCY": "16"}

    assert read(WORKER, told, tmp_path) == [16, 1, "threads"]
    refused = django_process(WORKER, {**KEY, "CELERY_WORKER_POOL": "gevent"}, tmp_path)
    assert refused.returncode != 0
    assert "CELERY_WORKER_POOL is prefork, threads or solo, not 'gevent'" in refused.stderr


def test_postgresql_and_oracle_connections_are_kept_as_long_as_conn_max_age_says(tmp_path):
    postgres = {"DATABASE_URL": "postgres://app@db.example:5432/memory"}
    oracle = {"ORACLE_DSN": "db.example:1521/FREEPDB1"}
    told = {"CONN_MAX_AGE": "0", "CONN_HEALTH_CHECKS": "true"}

    assert read(DATABASE, postgres, tmp_path) == ["postgresql", 60, False]
    assert read(DATABASE, oracle, tmp_path) == ["oracle", 60, False]
    assert read(DATABASE, {**postgres, **told}, tmp_path) == ["postgresql", 0, True]
    assert read(DATABASE, {**oracle, **told}, tmp_path) == ["oracle", 0, True]
