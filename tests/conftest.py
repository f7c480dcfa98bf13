"""Shared named users per role and tenant, and a few factories (STYLE §9)."""

import uuid

import pytest

from memory_review.assessments.standin import StandinConfig, StandinServer
from memory_review.tenancy.models import Role, Tenant
from tests.factories import make_jev, make_user


def pytest_report_header(config):
    from django.conf import settings

    return f"database backend: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"


@pytest.fixture(scope="session", autouse=True)
def tasks_known():
    """Every app's tasks registered, as a worker registers them when it starts: work is queued by
    a task's name (assessments/dispatch.py, integrity/heads.py), and Celery runs an eager task by
    name only when it knows it; otherwise it sends it to the broker, where no worker takes it. A
    test file run alone (test_feed_race.py) passed only in the whole suite, where another file's
    import of the tasks had registered them."""
    from memory_review.celery import app

    app.loader.import_default_modules()


TEST_AUDIT_KEY, TEST_AUDIT_KEY_ID = "5e" * 32, "test-key"


@pytest.fixture(autouse=True)
def audit_key(settings, tmp_path):
    """Every test signs its audit rows with one known key and keeps checkpoints to itself."""
    settings.AUDIT_KEY, settings.AUDIT_KEY_ID = TEST_AUDIT_KEY, TEST_AUDIT_KEY_ID
    settings.AUDIT_CHECKPOINT_DIR = str(tmp_path / "audit-checkpoints")
    # A test's transaction never commits, so a sequencer run queued on commit would never come:
    # audit rows are linked in the writer's transaction, not the default (deferred) way.
    # tests/test_sequencer.py, test_sealed_values.py, test_feed_race.py and
    # review/test_waiting_rows_on_screens.py run the deferred way.
    settings.AUDIT_SEQUENCER = "inline"


@pytest.fixture(autouse=True)
def uncached_counts(monkeypatch):
    """Tests reuse ids across rollbacks: a cached count of one test's items, or a kept figure
    whose data's mark (its highest ids) comes round again, would leak into the next. Counted
    afresh every time here, and each test keeps its figures under keys of its own."""
    from memory_review.calibration import figures, labeling
    from memory_review.quality import gate, health, results

    monkeypatch.setattr(labeling, "ITEM_COUNTS_SECONDS", 0)
    monkeypatch.setattr(health, "SUMMARY_SECONDS", 0)  # a tenant's audit summary for /metrics
    monkeypatch.setattr(results, "RESULTS_SECONDS", 0)  # what the labels alone decide, kept
    gate.forget()  # the gate's state, read once every READ_SECONDS by a process
    own, key = uuid.uuid4().hex[:12], figures.key
    monkeypatch.setattr(results, "CACHE_PREFIX", f"quality-{own}")
    monkeypatch.setattr(figures, "key", lambda name, tenant, params: f"{key(name, tenant, params)}:{own}")


@pytest.fixture
def acme(db):
    return Tenant.objects.create(slug="acme", name="Acme Support")


@pytest.fixture
def globex(db):
    return Tenant.objects.create(slug="globex", name="Globex Logistics")


@pytest.fixture
def lead(acme):
    return make_user("acme-lead", acme, Role.LEAD)


@pytest.fixture
def auditor(acme):
    return make_user("acme-auditor", acme, Role.AUDITOR)


@pytest.fixture
def reviewer(acme):
    return make_user("acme-reviewer", acme, Role.REVIEWER)


@pytest.fixture
def labeler(acme):
    return make_user("acme-labeler", acme, Role.LABELER)


@pytest.fixture
def globex_lead(globex):
    return make_user("globex-lead", globex, Role.LEAD)


@pytest.fixture
def policy(acme):
    """The tenant's active policy v1, with the design defaults."""
    from memory_review.assessments.services import policy_ensure_default

    return policy_ensure_default(tenant=acme, created_by="test")


# The real SDK over HTTP against the stand-in, in-process on an ephemeral port.


@pytest.fixture
def standin_config():
    return StandinConfig()


@pytest.fixture
def standin(standin_config):
    with StandinServer(standin_config) as server:
        yield server


@pytest.fixture
def jev(standin):
    return make_jev(standin.url)


@pytest.fixture
def orphans_allowed(db):
    """Deleting a row around the application orphans the rows that point at it, on purpose. The
    foreign-key check pytest-django runs before rolling a test back is not what these tests are
    about: the rollback is asked for outright (torn down before the database fixture)."""
    from django.db import connection

    yield
    connection.needs_rollback = True
