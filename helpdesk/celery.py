"""The Celery app. Broker: Redis when REDIS_URL is set, else a folder under var/ (embedded default)."""

import os

from celery import Celery, signals

from helpdesk.context import SCHEDULED_TASK, Actor, reset_actor, set_actor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")

app = Celery("helpdesk")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# A task acts as `scheduledTask` in the audit log (and for createdByType), whoever enqueued it.
@signals.task_prerun.connect
def _set_task_actor(task_id=None, task=None, **kwargs):
    task.request.helpdesk_actor_token = set_actor(Actor(type=SCHEDULED_TASK))


@signals.task_postrun.connect
def _reset_task_actor(task_id=None, task=None, **kwargs):
    token = getattr(task.request, "helpdesk_actor_token", None)
    if token is not None:
        reset_actor(token)
