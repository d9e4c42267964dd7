"""Locks that keep the lock order of docs/architecture.md ("Locks are taken in one order")."""

from __future__ import annotations

from django.db.models import Q

from accounts.models import Agent, Team
from tickets.models import Ticket


def lock_reached_tickets(instance) -> None:
    """Before a team's, an agent's or a tag's deletion cascades into tickets (their links deleted, their
    assignment set to NULL), lock those tickets in ID order, as every ticket write locks its tickets first: the
    cascade then waits for a write in progress instead of deadlocking with it (it would take the links' locks
    first, the write the ticket's)."""
    through = {Team: Ticket.teams.through, Agent: Ticket.followers.through}.get(
        type(instance), Ticket.tags.through
    )
    column = {Team: "team", Agent: "agent"}.get(type(instance), "tag")
    reached = Q(pk__in=through.objects.filter(**{column: instance}).values("ticket_id"))
    if type(instance) in (Team, Agent):
        reached |= Q(**{f"assignment_{column}": instance})
    list(
        Ticket.objects.filter(reached, license_id=instance.license_id)
        .select_for_update(no_key=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
