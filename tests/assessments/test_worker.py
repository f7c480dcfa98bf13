"""A real Celery worker on Redis: killed mid-assessment, and two at once on the same event.

PostgreSQL only: the workers are separate processes that must see the test's committed rows,
and the row locks that make a second worker wait are no-ops on SQLite.
"""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection

from memory_review.assessments.invalidation import observe_event
from memory_review.assessments.models import Assessment, Verdict
from memory_review.assessments.standin import StandinConfig
from memory_review.assessments.tasks import run_assessment
from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.celery import app as celery_app
from memory_review.memories.models import Memory
from memory_review.memories.services import event_record
from tests.factories import TEST_REDIS, make_memory, redis_up

BROKER = TEST_REDIS


pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    # Under CI a missing Redis is a failure, never a quiet skip (.ci/run starts it).
    pytest.mark.skipif(not os.environ.get("CI") and not redis_up(), reason=f"needs Redis at {BROKER}"),
    pytest.mark.django_db(transaction=True),
]


class Workers:
    """Celery worker processes on a private Redis database, pointed at the test database."""

    def __init__(self, standin_url: str, broker: str = BROKER, **env):
        db = connection.settings_dict
        self.env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "CELERY_BROKER_URL": broker,
            "CELERY_VISIBILITY_TIMEOUT": "3",
            "CELERY_RESTORE_INTERVAL": "1",
            "JEV_STANDIN_URL": standin_url,
            "TYPESAFE_API_KEY": "",
            # The workers sign audit rows with the key this test verifies them with.
            "AUDIT_KEY": settings.AUDIT_KEY,
            "AUDIT_KEY_ID": settings.AUDIT_KEY_ID,
            "AUDIT_CHECKPOINT_DIR": settings.AUDIT_CHECKPOINT_DIR,
            # A short lease, so the redelivered task can take over from the killed worker soon.
            "JEV_TIMEOUT_S": "5",
            "JEV_MAX_TRIES": "1",
            "ASSESSMENT_LEASE_S": "3",
            **env,
        }
        self.processes: list[subprocess.Popen] = []

    def start(self, name: str, *options: str) -> subprocess.Popen:
        command = [
            sys.executable, "-m", "celery", "-A", "memory_review", "worker", "--pool=solo",
            f"--hostname={name}@%h", "--without-gossip", "--without-mingle", "--loglevel=WARNING", *options,
        ]  # fmt: skip
        process = subprocess.Popen(command, env=self.env, cwd=settings.BASE_DIR, start_new_session=True)
        self.processes.append(process)
        return process

    def start_beat(self, schedule: Path) -> subprocess.Popen:
        command = [
            sys.executable, "-m", "celery", "-A", "memory_review", "beat", "--loglevel=WARNING",
            f"--schedule={schedule}",
        ]  # fmt: skip
        process = subprocess.Popen(command, env=self.env, cwd=settings.BASE_DIR, start_new_session=True)
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture
def workers(standin, request):
    redis.Redis.from_url(BROKER).flushdb()
    pool = Workers(standin.url, **getattr(request, "param", {}))
    yield pool
    pool.stop_all()
    redis.Redis.from_url(BROKER).flushdb()


def enqueue(assessment: Assessment) -> None:
    with celery_app.connection_for_write(BROKER) as broker:
        run_assessment.apply_async(args=(assessment.tenant_id, assessment.pk), connection=broker)


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def state(assessment: Assessment) -> str:
    return Assessment.objects.values_list("state", flat=True).get(pk=assessment.pk)


@pytest.fixture
def event_assessment(acme, policy):
    make_memory(acme, subject="delivery-address", content="Deliveries go to the Paris office.")
    make_memory(acme, subject="support-hours", content="Support is staffed from 9 to 5 on weekdays.")
    event = event_record(
        tenant=acme, source="chat", text="From now on deliveries go to the Lyon office instead."
    )
    return observe_event(event=event, enqueue=lambda a: None)


@pytest.mark.parametrize("standin_config", [StandinConfig(latency_ms=2500)])
def test_a_worker_killed_mid_assessment_hands_it_to_another_which_completes_it(
    acme, event_assessment, workers, standin
):
    first = workers.start("first")
    enqueue(event_assessment)
    wait_for(lambda: standin.system_one_count >= 1, 30, "the first worker to ask Jev")

    workers.kill(first)  # SIGKILL while Jev is answering

    assert state(event_assessment) == "running"  # leased to the dead worker, nothing recorded
    assert not Verdict.objects.exists()
    workers.start("second")
    wait_for(lambda: state(event_assessment) == "done", 60, "the redelivered task to finish")
    assert Verdict.objects.filter(assessment=event_assessment).count() == 2
    assert Transition.objects.count() == 1
    assert Memory.objects.get(subject="delivery-address").status == "superseded"
    assert verification.problem_in(acme) is None


# The broker would hand the task back only after ten minutes: the reaper must not wait for it.
WITH_BEAT = {"CELERY_VISIBILITY_TIMEOUT": "600", "ASSESSMENT_REAP_SECONDS": "1", "TTL_SWEEP_SECONDS": "1"}


@pytest.mark.parametrize("standin_config", [StandinConfig(latency_ms=2500)])
@pytest.mark.parametrize("workers", [WITH_BEAT], indirect=True)
def test_a_killed_workers_assessment_finishes_within_a_minute_by_the_reaper(
    acme, event_assessment, workers, standin, tmp_path
):
    from memory_review.assessments.models import AssessmentRestart

    first = workers.start("first")
    enqueue(event_assessment)
    wait_for(lambda: standin.system_one_count >= 1, 30, "the first worker to ask Jev")
    workers.kill(first)  # SIGKILL while Jev is answering: its message stays unacked for 600 s
    killed_at = time.monotonic()

    workers.start("second")
    workers.start_beat(tmp_path / "beat-schedule")
    wait_for(lambda: state(event_assessment) == "done", 60, "the reaper to hand it to the second worker")

    took = time.monotonic() - killed_at
    assert took < 60
    restart = AssessmentRestart.objects.get(assessment=event_assessment)
    assert restart.actor == "system:lease-reaper" and restart.previous_state == "running"
    assert Memory.objects.get(subject="delivery-address").status == "superseded"
    assert verification.problem_in(acme) is None


@pytest.mark.parametrize("workers", [WITH_BEAT], indirect=True)
def test_beat_expires_a_memory_past_its_ttl_without_an_event(acme, workers, tmp_path):
    from datetime import timedelta

    from django.utils import timezone

    memory = make_memory(acme, subject="promo-code", valid_until=timezone.now() + timedelta(seconds=2))
    workers.start("sweeper")
    workers.start_beat(tmp_path / "beat-schedule")

    wait_for(lambda: Memory.objects.get(pk=memory.pk).status == "expired", 30, "the sweep to expire it")

    assert Transition.objects.get(memory=memory, action="expire").actor == "system:ttl-sweep"
    assert verification.problem_in(acme) is None


@pytest.mark.parametrize("standin_config", [StandinConfig(latency_ms=800)])
def test_two_workers_handed_the_same_event_give_the_result_of_one(acme, event_assessment, workers, standin):
    workers.start("one")
    workers.start("two")
    time.sleep(2)  # both consuming before the messages arrive
    enqueue(event_assessment)
    enqueue(event_assessment)

    wait_for(lambda: state(event_assessment) == "done", 60, "the assessment to finish")
    wait_for(lambda: not redis.Redis.from_url(BROKER).llen("celery"), 30, "both messages to be taken")
    time.sleep(2)  # let the second delivery finish too

    assert Verdict.objects.count() == 2
    assert Transition.objects.count() == 1
    assert standin.system_one_count == 1  # asked once: the second worker found the votes
    assert verification.problem_in(acme) is None


@pytest.mark.parametrize("standin_config", [StandinConfig(latency_ms=1500)])
def test_a_threads_pool_judges_events_at_once_in_one_process_each_exactly_once(
    acme, policy, workers, standin
):
    """Issue 30, item 2: one process, four threads, four events in flight; each delivered twice,
    the second delivery finds its lease held (a thread of the same process) and adds nothing."""
    assessments = []
    for n in range(4):
        customer = f"cust-{n}"
        make_memory(
            acme, subject=f"delivery-address-{n}", content="Deliveries go to Paris.", user_id=customer
        )
        event = event_record(
            tenant=acme, source="chat", text="From now on deliveries go to Lyon instead.", user_id=customer
        )
        assessments.append(observe_event(event=event, enqueue=lambda a: None))
    workers.start("threads", "--pool=threads", "--concurrency=4")
    time.sleep(2)  # consuming before the messages arrive
    for assessment in assessments:
        enqueue(assessment)
    for assessment in assessments:
        enqueue(assessment)

    done = Assessment.objects.filter(pk__in=[a.pk for a in assessments], state="done")
    wait_for(lambda: done.count() == 4, 90, "the four assessments to finish")
    wait_for(lambda: not redis.Redis.from_url(BROKER).llen("celery"), 30, "every message to be taken")
    time.sleep(5)  # the second deliveries come back once the leases lapse, and find each done

    # Their Jev phases overlapped: every one began before any ended (one at a time, none would).
    phases = [
        (judged - timedelta(milliseconds=jev_ms), judged)
        for judged, jev_ms in done.values_list("judged_at", "latency_ms")
    ]
    assert max(start for start, _ in phases) < min(end for _, end in phases)
    for assessment in assessments:
        assert Verdict.objects.filter(assessment=assessment).count() == 1
    assert Transition.objects.count() == 4  # each customer's memory superseded once
    assert set(
        Memory.objects.filter(subject__startswith="delivery-address").values_list("status", flat=True)
    ) == {"superseded"}
    assert verification.problem_in(acme) is None


def _other_sessions() -> list[int]:
    """The backends of this database other than the test's own: the worker's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return sorted(pid for (pid,) in cursor.fetchall())


@pytest.mark.parametrize("workers", [{"CONN_MAX_AGE": "600"}], indirect=True)
def test_a_worker_keeps_its_database_connection_from_task_to_task(acme, policy, workers, standin):
    """Issue 30: Celery closes a worker's connections before and after every task unless told not
    to (settings.CELERY_DB_REUSE_MAX), so each event judged forked a PostgreSQL backend and filled
    its caches anew. Kept as a web thread keeps its, the same backend serves task after task."""
    assessments = [
        observe_event(
            event=event_record(tenant=acme, source="chat", text=f"Deliveries go to dock {n} now."),
            enqueue=lambda a: None,
        )
        for n in range(3)
    ]
    workers.start("keeper")
    enqueue(assessments[0])
    wait_for(lambda: state(assessments[0]) == "done", 60, "the first assessment to finish")
    wait_for(lambda: len(_other_sessions()) == 1, 15, "the worker's connection, kept between tasks")
    kept = _other_sessions()

    for assessment in assessments[1:]:
        enqueue(assessment)
        wait_for(lambda a=assessment: state(a) == "done", 60, "the next assessment to finish")

    # (A lease renewal may hold a connection of its own for a moment after a task ends.)
    wait_for(lambda: _other_sessions() == kept, 15, "the same connection, and only it, kept")


def test_without_redis_the_worker_runs_on_the_broker_that_needs_no_server(
    acme, event_assessment, standin, tmp_path
):
    """What `make demo` falls back to when Redis is unreachable: files under VAR_DIR/broker."""
    from kombu import Connection

    folder = tmp_path / "broker"
    folder.mkdir()
    pool = Workers(standin.url, broker="filesystem://", VAR_DIR=str(tmp_path))
    try:
        pool.start("files")
        options = {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "control_folder": str(folder / "control"),
        }
        with Connection("filesystem://", transport_options=options) as broker:
            run_assessment.apply_async(args=(acme.pk, event_assessment.pk), connection=broker)
        wait_for(lambda: state(event_assessment) == "done", 60, "the task to go through the file broker")
    finally:
        pool.stop_all()
    assert Verdict.objects.filter(assessment=event_assessment).count() == 2
    assert (tmp_path / "broker" / "control").is_dir()  # its exchange table, under VAR_DIR
    assert not (Path.cwd() / "control").exists()  # and nothing in the working directory


@pytest.mark.parametrize("workers", [WITH_BEAT], indirect=True)
def test_beat_verifies_and_checkpoints_a_fresh_install_within_a_minute_of_starting(
    acme, workers, tmp_path, settings
):
    from memory_review.audit import checkpoints

    started = time.monotonic()
    workers.start("checkpointer")
    workers.start_beat(tmp_path / "beat-schedule")

    wait_for(lambda: checkpoints.path_for(acme).exists(), 60, "the first checkpoint")

    assert time.monotonic() - started < 60
    assert checkpoints.read(acme).lines == 1
    assert verification.latest(acme).intact


@pytest.mark.parametrize("standin_config", [StandinConfig(latency_ms=300)])
def test_a_tenants_burst_waits_in_its_own_lane_not_in_front_of_every_tenant(
    acme, globex, policy, workers, standin
):
    """A worker started as deployed (`-Q celery`) takes the tenants' lanes too, in turn: an event
    of a quiet tenant queued behind another tenant's burst of eight is judged among the burst's
    first, not after it."""
    from memory_review.assessments.dispatch import enqueue_assessment, lane
    from memory_review.assessments.services import policy_ensure_default

    policy_ensure_default(tenant=globex, created_by="test")
    assert lane(acme.pk) != lane(globex.pk), "consecutive tenants share no lane"

    def queued(tenant, customer: str) -> Assessment:
        make_memory(tenant, subject="delivery-address", content="Deliveries go to Paris.", user_id=customer)
        event = event_record(
            tenant=tenant, source="chat", text="Deliveries go to Lyon now.", user_id=customer
        )
        return observe_event(event=event, enqueue=lambda a: None)

    burst = [queued(acme, f"cust-{n}") for n in range(8)]
    quiet = queued(globex, "cust-q")
    with celery_app.connection_for_write(BROKER) as broker:
        for assessment in [*burst, quiet]:  # the quiet tenant's last of all
            enqueue_assessment(assessment, connection=broker)
    workers.start("lanes", "-Q", "celery")

    done = Assessment.objects.filter(pk__in=[a.pk for a in [*burst, quiet]], state="done")
    wait_for(lambda: done.count() == 9, 90, "the nine assessments to finish")
    finished = dict(done.values_list("pk", "finished_at"))
    after_it = [a for a in burst if finished[a.pk] > finished[quiet.pk]]
    assert len(after_it) >= 6, f"the quiet tenant's event finished after {8 - len(after_it)} of the burst"
