"""Enqueue a Celery task once the current transaction commits, without ever failing the request.

Why: the work is committed before the task is published, so a broker outage (Redis away) must not turn a
committed write into a 500 (a client retry would then duplicate it). Publishing is bounded by the broker
settings (a short connect timeout and a short publish retry policy); if it still fails it is logged and
dropped here. That is safe only because every task enqueued this way has a durable record in the database
and a periodic sweeper that enqueues again what is still pending:
- e-mail: the OutboundMessage row (pending) → `templates_app.tasks.sweep_outbound_messages` (every 30 s);
- billing: the charge intent → `billing.tasks.reconcile_charges`.
A new task enqueued with this helper needs such a record and sweeper too.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)

SHOWN_MOST = 1024  # Celery's `argsrepr_maxsize`: a longer repr is left to Celery, which shortens it


def task_named(name: str):
    """The task of this Celery name (the dotted path of its function, as the beat schedule names it).

    A module that a task calls enqueues that task by its name and never imports it: tasks.py stays at the top
    of its app, with no import circle between a task and the code it runs (tests/test_layering.py)."""
    return import_string(name)


def enqueue_now(task, *args, **kwargs) -> bool:
    """Publish `task` (a task, or its name: `task_named`) with these arguments; False (logged) if the broker
    cannot be reached."""
    if isinstance(task, str):
        task = task_named(task)
    try:
        # Measured per publish (callgrind, bench/README.md "Issue 34: fifth round"): `declare=[]` skips
        # binding the default queue on every publish (-0.26 M; a task goes to its queue's list by the queue's
        # name, which needs no binding on Redis nor on the embedded folder); the arguments' repr shown in the
        # message (Flower, the worker's log) made with `repr` instead of Celery's `saferepr` (-0.31 M).
        task.apply_async(args, kwargs, declare=[], argsrepr=_shown(args), kwargsrepr=_shown(kwargs))
    except Exception:
        log.warning(
            "Could not enqueue %s%r; its periodic sweeper will enqueue it again",
            getattr(task, "name", task),
            args,
            exc_info=True,
        )
        return False
    return True


def _shown(value) -> str | None:
    text = repr(value)
    return text if len(text) <= SHOWN_MOST else None


def enqueue_on_commit(task, *args, **kwargs) -> None:
    """`enqueue_now(task, *args, **kwargs)` after the current transaction commits (at once outside one).
    `task` may be the task's name (`task_named`)."""
    transaction.on_commit(lambda: enqueue_now(task, *args, **kwargs))
