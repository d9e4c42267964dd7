"""Time rules (an `hoursSince` condition): run by beat every minute (tickets.tasks.run_time_rules).

Each active time rule is driven by its first `hoursSince` condition with `gt` (a time rule needs one: checked at
save): a ticket comes due when `now - hours` passes its time field. Each rule remembers how far it has swept
(`swept_until`, the cutoff of its last committed batch), so a run reads only the slice of tickets whose time
came since the last run, (swept_until - hours, now - hours], walked in (field, id) order on the license's tickets
(the search indexes lead with license, silo, status and carry createdAt, updatedAt and lastMessageAt; the other
three fields are read by range on the license's tickets in the tickets silo). A rule's first run reads every
ticket already past its time once.

Kill-safe and exactly once: a batch is one transaction that locks its tickets (SKIP LOCKED on PostgreSQL, like
the auto-close), fires the rule through the same firing rows as event rules (unique per rule and ticket, so
`limitPerTicket` holds however often a slice is read again) and moves `swept_until` in the same commit; a killed
batch changed nothing and the next run reads the same slice again. The rule's other conditions are evaluated on
each ticket of the slice; the changes it makes run the event rules like any other write.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.utils import timezone

from helpdesk.context import SCHEDULED_TASK, Actor, acting_as
from helpdesk.transactions import unit_of_work
from tickets.models import Ticket
from tickets.rules import engine
from tickets.rules.conditions import TIME_FIELDS, Facts, matches
from tickets.rules.models import Rule

BATCH_SIZE = 200


def driver(rule: Rule) -> dict | None:
    return next((c for c in rule.triggers if c["type"] == "hoursSince" and c["op"] == "gt"), None)


def _slice(rule: Rule, field: str, start, end):
    tickets = Ticket.objects.filter(license_id=rule.license_id, silo="tickets", **{f"{field}__lte": end})
    if start is not None:
        tickets = tickets.filter(**{f"{field}__gt": start})
    return tickets.order_by(field, "id")


def run_rule(rule: Rule, *, now=None, batch_size: int = BATCH_SIZE) -> int:
    now = now or timezone.now()
    condition = driver(rule)
    if condition is None:
        return 0
    field, hours = TIME_FIELDS[condition["field"]], timedelta(hours=condition["value"])
    end = now - hours
    fired = 0
    while True:
        rule.refresh_from_db(fields=["swept_until"])
        start = None if rule.swept_until is None else rule.swept_until - hours
        if start is not None and start >= end:
            return fired
        count, done = _batch_once(rule, field, start, end, now, batch_size, hours)
        fired += count
        if done:
            return fired


def _batch_once(rule, field, start, end, now, batch_size, hours) -> tuple[int, bool]:
    with unit_of_work():
        candidates = _slice(rule, field, start, end)
        if connection.features.has_select_for_update_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True, of=("self",))
        tickets = list(candidates.select_related("license")[:batch_size])
        fired = 0
        for ticket in tickets:
            if matches(rule, Facts(ticket, [], now=now)) and engine.fire(rule, ticket, now):
                fired += 1
        done = len(tickets) < batch_size
        reached = end if done else getattr(tickets[-1], field)
        # Not a change of the rule (no audit entry): how far its sweep has committed.
        Rule.objects.filter(pk=rule.pk).update(swept_until=reached + hours)
        return fired, done


def run_time_rules(*, now=None, batch_size: int = BATCH_SIZE) -> int:
    """Every active time rule of every license, once; returns how many firings."""
    now = now or timezone.now()
    fired = 0
    with acting_as(Actor(type=SCHEDULED_TASK)):
        for rule in Rule.objects.filter(active=True, is_time_rule=True).order_by(
            "license_id", "ordering", "id"
        ):
            fired += run_rule(rule, now=now, batch_size=batch_size)
    return fired
