"""The Celery app. Tasks are thin: they take ids and call services (STYLE §6)."""

import os

from celery import Celery
from celery.signals import beat_init, celeryd_after_setup, task_postrun, task_prerun
from django.conf import settings
from django.db import close_old_connections

from memory_review.integrity import context
from memory_review.integrity.db_context import clear_tenant, current_tenant

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_review.settings")

app = Celery("memory_review")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# What a task writes to sealed rows is by `system:<task>` (integrity/context.py), one token per task run.
_acting: dict[str, object] = {}


@task_prerun.connect
def _act_as_the_task(task_id=None, task=None, **kwargs):
    _acting[task_id] = context.begin(f"system:{task.name.rsplit('.', 1)[-1]}")


@task_postrun.connect
def _stop_acting_as_the_task(task_id=None, **kwargs):
    token = _acting.pop(task_id, None)
    if token is not None:
        context.end(token)


@task_prerun.connect
@task_postrun.connect
def _keep_connections_as_a_request_does(task=None, **kwargs):
    """A worker keeps its database connection from task to task as a web thread keeps its from
    request to request: closed only past CONN_MAX_AGE or when an error left it unusable
    (settings.CELERY_DB_REUSE_MAX says why Celery's own closing is off). An eager task runs
    inside its caller's request or test, whose connection is its caller's to keep. A task that
    left its tenant set on the connection (set_tenant outside tenant_context) has it cleared, so
    the next task on the kept connection starts with none."""
    if task is not None and not getattr(task.request, "is_eager", False):
        if current_tenant() is not None:
            clear_tenant()
        close_old_connections()


@celeryd_after_setup.connect
def _take_every_lane_with_the_default_queue(sender=None, instance=None, **kwargs):
    """A worker that takes Celery's own queue (`-Q celery`, as deployed, or no -Q) takes every
    events lane too (settings.ASSESSMENT_LANES), and one that does not takes none: the lanes come
    and go with a setting, and no worker command names them (they are not in CELERY_TASK_QUEUES,
    and Celery declares a lane the first time an event is sent to it). It then takes from its
    queues in turn (kombu's Redis transport puts the queue it last took from at the back), so a
    tenant's burst waits in its own lane."""
    queues = instance.app.amqp.queues
    if "celery" in queues.consume_from:
        for lane in settings.ASSESSMENT_LANE_QUEUES:
            queues.select_add(lane)


@beat_init.connect
def _verify_and_checkpoint_at_start(sender=None, **kwargs):
    """A fresh install is verified and checkpointed as soon as beat starts, not an interval later."""
    sender.app.send_task("memory_review.audit.tasks.checkpoint_all")
