"""Solved tickets close by themselves AUTO_CLOSE_SOLVED_DAYS after their status changed (`statusChangedAt`).

Run by beat (tickets.tasks.close_solved_tickets), as the scheduled-task actor: each closure is a `status` event
with author `system` and source `system`, written by tickets.services.ticket_update like any other change.

Like the purge, it is safe under kill and under overlap:
- the selection is stateless (the rule and the clock), walked in (status_changed_at, id) order, batch by batch
  (AUTO_CLOSE_BATCH_SIZE), on the partial index `ticket_solved_changed`;
- each batch is its own transaction: its rows are locked again with the rule in the WHERE (`FOR UPDATE SKIP
  LOCKED` on PostgreSQL), so a ticket reopened since it was selected, or being changed right now, is left alone
  and a second run at the same time skips what the first holds; a batch killed before its commit closed nothing,
  one that committed closed its tickets with their events, and the next run finds whatever is still due.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from helpdesk.transactions import unit_of_work
from tickets.models import Ticket

logger = logging.getLogger("tickets.auto_close")


def cutoff(now: datetime | None = None) -> datetime:
    days = settings.AUTO_CLOSE_SOLVED_DAYS
    if days < 1:
        raise ImproperlyConfigured(f"AUTO_CLOSE_SOLVED_DAYS must be at least 1, got {days}")
    return (now or timezone.now()) - timedelta(days=days)


def _due(limit: datetime):
    return Ticket.objects.filter(silo="tickets", status="solved", status_changed_at__lte=limit)


def _close_batch(ids: list, limit: datetime) -> int:
    from tickets import services

    with unit_of_work():
        locked = _due(limit).filter(pk__in=ids)
        if connection.features.has_select_for_update_skip_locked:
            locked = locked.select_for_update(skip_locked=True, of=("self",))
        closed = 0
        for ticket in locked.order_by("pk"):
            services.ticket_update(ticket=ticket, status="closed")
            closed += 1
        return closed


def close_solved(*, now: datetime | None = None, batch_size: int | None = None) -> int:
    """Close every solved ticket that is due; returns how many were closed."""
    limit = cutoff(now)
    batch_size = batch_size or settings.AUTO_CLOSE_BATCH_SIZE
    closed, after = 0, None
    while True:
        query = _due(limit)
        if after is not None:
            query = query.filter(
                Q(status_changed_at__gt=after[0]) | Q(status_changed_at=after[0], id__gt=after[1])
            )
        rows = list(
            query.order_by("status_changed_at", "id").values_list("id", "status_changed_at")[:batch_size]
        )
        if not rows:
            break
        after = (rows[-1][1], rows[-1][0])
        closed += _close_batch([pk for pk, _ in rows], limit)
        if len(rows) < batch_size:
            break
    if closed:
        logger.info("Closed %d solved ticket(s) older than %s", closed, limit.isoformat())
    return closed
