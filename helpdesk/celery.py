"""The Celery app. Broker: Redis when REDIS_URL is set, else a folder under var/ (embedded default)."""

import logging
import logging.config
import os
import time

from celery import Celery, signals

from helpdesk.context import SCHEDULED_TASK, Actor, reset_actor, set_actor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")

app = Celery("helpdesk")
app.config_from_object("django.conf:settings", namespace="CELERY")


@app.on_configure.connect
def _settings_read_once(sender, **kwargs):
    """Celery reads its settings as the CELERY_* names of Django's settings, copied into a dict when it first
    needs them (a publish looks up seven: through `django.conf.settings` each missing name was two raised and
    caught AttributeErrors, ~0.25 M of a publish's instructions; bench/README.md, "Issue 34: fifth
    round"). Tests change Celery's settings through `app.conf`, as before."""
    from django.conf import settings

    names = [name for name in dir(settings) if name.startswith("CELERY_")]
    sender.config_from_object({name: getattr(settings, name) for name in names}, namespace="CELERY")


app.autodiscover_tasks()

task_log = logging.getLogger("helpdesk.task")

# The message header carrying the log context (request ID, license, account) of whoever enqueued the task.
LOG_CONTEXT_HEADER = "helpdesk_log_context"


# The worker logs through Django's LOGGING (LOG_FORMAT, the request ID on every line), not Celery's own setup.
@signals.setup_logging.connect
def _configure_logging(**kwargs):
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@signals.before_task_publish.connect
def _pass_log_context(headers=None, **kwargs):
    from helpdesk.logs import log_context

    context = log_context()
    if headers is not None and context:
        headers[LOG_CONTEXT_HEADER] = {k: context.get(k) for k in ("requestID", "license", "account")}


# A task acts as `scheduledTask` in the audit log (and for createdByType), whoever enqueued it.
@signals.task_prerun.connect
def _set_task_actor(task_id=None, task=None, **kwargs):
    from helpdesk.logs import _context, log_context

    task.request.helpdesk_actor_token = set_actor(Actor(type=SCHEDULED_TASK))
    # The originating request's context: from the message headers, or (a task run eagerly, in the request's
    # thread) the current one. A task nobody's request enqueued (beat) has no request ID.
    # (A worker puts custom message headers on the request; `apply(headers=...)` keeps them in request.headers.)
    inherited = (
        getattr(task.request, LOG_CONTEXT_HEADER, None)
        or (getattr(task.request, "headers", None) or {}).get(LOG_CONTEXT_HEADER)
        or log_context()
    )
    fields = {k: inherited.get(k) for k in ("requestID", "license", "account")}
    task.request.helpdesk_log_token = _context.set({**fields, "task": task.name, "taskID": task_id})
    task.request.helpdesk_started = time.monotonic()


@signals.task_postrun.connect
def _reset_task_actor(task_id=None, task=None, state=None, **kwargs):
    started = getattr(task.request, "helpdesk_started", None)
    if started is not None:
        duration_ms = round((time.monotonic() - started) * 1000, 1)
        task_log.info(
            "task %s %s %sms",
            task.name,
            state,
            duration_ms,
            extra={"task": task.name, "taskID": task_id, "state": state, "durationMs": duration_ms},
        )
    token = getattr(task.request, "helpdesk_actor_token", None)
    if token is not None:
        reset_actor(token)
    log_token = getattr(task.request, "helpdesk_log_token", None)
    if log_token is not None:
        from helpdesk.logs import _context

        _context.reset(log_token)
