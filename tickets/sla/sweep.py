"""SLA breaches at the minute they happen: beat runs `record_breaches` every minute (tickets.tasks.record_sla_breaches).

It reads the tickets whose nearest due time has passed (`sla_due_at <= now`: the partial index `ticket_sla_due`,
holding only tickets with a running clock), in batches of one transaction each that lock their tickets (SKIP
LOCKED on PostgreSQL: a ticket being written is taken by the next run). Each clock past due is marked breached
in the ticket's clocks, its breach `{metric, at}` added to `sla.breaches`, a ticket event `sla` written (author
type `system`, `{metric, dueAt, policyID}`: the `tickets.events.sla` webhook and the rules' `slaBreached`
condition read it), and `sla_due_at` moves to the next running clock, all in the batch's commit. Kill-safe and
exactly once: a killed batch changed nothing and is read again; a committed one no longer matches (its clocks
are breached, `sla_due_at` moved on).
"""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from helpdesk.context import SCHEDULED_TASK, Actor, acting_as
from helpdesk.timestamps import iso
from helpdesk.transactions import unit_of_work
from tickets.events import Author, History
from tickets.models import Ticket
from tickets.sla import apply, tracker

BATCH_SIZE = 200
SYSTEM_AUTHOR = Author("system", None, "System")


def _batch(now, batch_size: int) -> int:
    with unit_of_work():
        due = Ticket.objects.filter(sla_due_at__lte=now).order_by("sla_due_at", "id")
        if connection.features.has_select_for_update_skip_locked:
            due = due.select_for_update(skip_locked=True, of=("self",))
        tickets = list(due[:batch_size])
        for ticket in tickets:
            breach(ticket, now)
        return len(tickets)


def breach(ticket: Ticket, now) -> list[str]:
    """Record the breaches of `ticket`'s clocks past due at `now` (inside the caller's unit of work)."""
    clocks = {**ticket.sla_clock, "metrics": {k: dict(v) for k, v in ticket.sla_clock["metrics"].items()}}
    found = tracker.breach(clocks, now)
    breaches = list((ticket.sla or {}).get("breaches", []))
    history = History(ticket, now)
    for metric, at in found:
        breaches.append({"metric": metric, "at": iso(at)})
        history.add(
            "sla", SYSTEM_AUTHOR, payload={"metric": metric, "dueAt": iso(at), "policyID": clocks["policyID"]}
        )
    apply.save(ticket, clocks, breaches)
    history.save()
    return [metric for metric, _at in found]


def record_breaches(*, now=None, batch_size: int = BATCH_SIZE) -> int:
    """Every ticket whose clock ran out by `now`, once; returns how many tickets were handled."""
    now = now or timezone.now()
    handled = 0
    with acting_as(Actor(type=SCHEDULED_TASK)):
        while True:
            count = _batch(now, batch_size)
            handled += count
            if count < batch_size:
                return handled
