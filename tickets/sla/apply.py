"""SLA clocks inside every ticket write: which policy applies, and the due times it sets.

This hangs off `tickets.signals.events_recorded`, sent by History.save inside the write's transaction once the
ticket and its relations are final, and is connected before the webhook outbox (tickets/apps.py), so the
`tickets.create|update` documents, the write's response and the rules (whose own changes record events and come
back here) all see the ticket's `sla` as it now is. The policy is chosen again on every write that records events
(the first in `ordering` whose conditions hold: tickets.rules.conditions), so a ticket that moves to another team
or priority gets the clocks of the policy that applies now (re-targeted, the business time already used kept);
one that no policy matches any more loses its `sla`.

Cost: the license's policies (with their business hours) are read once per unit of work (one statement, as the
rules read their event rules), and the ticket's SLA columns are written with one UPDATE when they changed, so a
ticket write under a policy adds two statements, one without any policy adds one. Events that are only SLA
breaches (the sweep's, which saves the clocks itself) move nothing.
"""

from __future__ import annotations

from django.utils import timezone

from helpdesk.transactions import current_unit
from helpdesk.versioned import VersionedCopies
from tickets import totals
from tickets.models import Ticket
from tickets.rules.conditions import Facts, holds
from tickets.sla import clock, tracker
from tickets.sla.clock import Schedule
from tickets.sla.models import SlaPolicy

_STATE = "tickets.sla"


def _state() -> dict | None:
    unit = current_unit()
    if unit is None:
        return None
    return unit.state.setdefault(_STATE, {"policies": {}})


def on_events_recorded(sender, *, ticket, events, created=False, **kwargs) -> None:
    if all(event.type == "sla" for event in events):
        return
    found = policies(ticket.license_id, _state())
    if not found and ticket.sla_clock is None:
        return
    facts = Facts(ticket, events, created=created, now=timezone.now())
    chosen = next(((p, s) for p, s in found if all(holds(c, facts) for c in p.conditions)), None)
    messages = [e.message for e in events if e.type == "message" and e.message is not None]
    write = tracker.Write(
        now=facts.now,
        status=ticket.status,
        targets={} if chosen is None else tracker.targets_for(chosen[0].targets, ticket.priority),
        created=created,
        client_message=any(m.author_type == "client" and not m.is_private for m in messages),
        # a new ticket's first message is the request, whoever typed it (an agent on the phone)
        agent_response=not created and any(m.author_type == "agent" and not m.is_private for m in messages),
        answered_before=not created and ticket.last_agent_message_at is not None,
    )
    move(ticket, chosen, write)


# Every ticket write that records events asks for its license's policies: each process keeps them per license
# and version (helpdesk.versioned), dropped by any save or delete of a policy or of business hours, so a write
# costs a cache read, not a query (none at all for a second ticket of the same unit of work).
_copies = VersionedCopies("sla")


def policies_changed(sender, *, instance, **kwargs) -> None:
    """Receiver of SlaPolicy's and BusinessHours' post_save and post_delete."""
    _copies.changed(instance.license_id)


def policies(license_id: int, state: dict | None = None) -> list[tuple[SlaPolicy, Schedule | None]]:
    """The license's policies in order, each with its schedule (None: 24/7); once per unit of work."""
    held = state["policies"] if state is not None else {}
    if license_id not in held:

        def load():
            rows = SlaPolicy.objects.filter(license_id=license_id).select_related("business_hours")
            return [
                (policy, None if policy.business_hours is None else schedule_of(policy.business_hours))
                for policy in rows.order_by("ordering", "created_at", "id")
            ]

        held[license_id] = _copies.get(license_id, load)
    return held[license_id]


def business_seconds(ticket: Ticket, start, end) -> float | None:
    """The business seconds of [start, end) under the business hours of the ticket's policy now (its clocks'
    policy: this write's, set above), calendar seconds under a 24/7 policy; None when no policy applies. The
    reports' business time (tickets.reports.wiring); the policies are this unit of work's copy, no statement."""
    if ticket.sla_clock is None:
        return None
    policy_id = ticket.sla_clock["policyID"]
    for policy, schedule in policies(ticket.license_id, _state()):
        if str(policy.pk) == policy_id:
            return clock.between(schedule, start, end)
    return None


def schedule_of(hours) -> Schedule:
    return Schedule.of(hours.timezone, hours.week, hours.holidays)


def move(ticket: Ticket, chosen, write: tracker.Write) -> None:
    """Set the ticket's clocks for `write` under `chosen` ((policy, schedule) or None); one UPDATE if changed."""
    if chosen is None:
        clocks, breaches = None, []
    else:
        policy, schedule = chosen
        breaches = (ticket.sla or {}).get("breaches", []) if ticket.sla_clock is not None else []
        if ticket.sla_clock is None:
            clocks = tracker.begin(str(policy.pk), write, schedule)
        else:
            clocks = tracker.advance(ticket.sla_clock, str(policy.pk), write, schedule)
    if clocks == ticket.sla_clock:
        return
    save(ticket, clocks, breaches)


def save(ticket: Ticket, clocks: dict | None, breaches: list) -> None:
    # the ticket is locked (by its write, or the sweep): declared to the search totals before it changes (a
    # ticket its write declared already costs nothing more)
    totals.changing(ticket.license_id, [ticket.pk])
    ticket.sla_clock = clocks
    ticket.sla = tracker.document(clocks, breaches)
    ticket.sla_due_at = tracker.due(clocks)
    ticket.sla_breached = bool(breaches)
    # Derived columns, not a change anyone made: no updatedAt, no event (the ticket's write or the sweep's
    # `sla` event is the change).
    Ticket.objects.filter(pk=ticket.pk).update(
        sla=ticket.sla, sla_clock=clocks, sla_due_at=ticket.sla_due_at, sla_breached=ticket.sla_breached
    )
