"""The ticket's history as it is written: who made a change, from where, and the event rows themselves.

tickets.services calls these inside the transaction of the write they record, so a history entry exists exactly
when its change does. Who and from where come from the actor context (helpdesk.context), not from arguments:
an `administrator` writes from `admin`, an `agent`/`api` caller from `api`, an `emailMessage` from `email`, and
scheduled tasks and the system from `system`, a customer on a public page (the rating page) from `web` (the
actor's `source`); `detailedSource` keeps the actor type itself. The events' JSON is
built in tickets.events_output.
"""

from __future__ import annotations

import dataclasses

from django.db.models import Q
from django.utils import timezone

from accounts.models import Agent
from helpdesk import context
from helpdesk.compiled import Insert
from tickets.models import Message, Ticket, TicketEvent
from tickets.signals import events_recorded

SOURCE_BY_ACTOR = {
    context.ADMINISTRATOR: "admin",
    context.AGENT: "api",
    context.API: "api",
    context.EMAIL_MESSAGE: "email",
    context.SCHEDULED_TASK: "system",
    context.HELPDESK_SYSTEM: "system",
    context.PAYMENT_PROVIDER: "system",
}
SYSTEM_NAME = "System"
_PEOPLE = (context.ADMINISTRATOR, context.AGENT, context.API)


@dataclasses.dataclass(frozen=True)
class Author:
    type: str  # agent, client, system
    agent: Agent | None = None
    name: str = ""


def agent_author(agent: Agent) -> Author:
    return Author("agent", agent, agent.name or agent.email)


def acting_agent(license_id: int) -> Agent | None:
    """The current actor's agent in this license, if the actor is a person who is one."""
    actor = context.current_actor()
    if actor.type not in _PEOPLE or actor.id is None:
        return None
    # The actor's ID is its account's (API, admin); an agent ID is accepted too.
    return Agent.objects.filter(Q(account_id=actor.id) | Q(pk=actor.id), license_id=license_id).first()


def client_author(ticket: Ticket, email: str = "") -> Author:
    """The customer: the requester, or (mail in) the sender, named as the ticket knows them."""
    email = (email or ticket.requester_email).strip().lower()
    if email == ticket.requester_email.lower():
        return Author("client", None, ticket.requester_name or ticket.requester_email)
    for person in ticket.people_in_the_loop or []:
        if person.get("email", "").lower() == email:
            return Author("client", None, person.get("name") or email)
    return Author("client", None, email)


def acting_author(ticket: Ticket, agent: Agent | None = None) -> Author:
    """Who makes a change other than a message: the given agent, else the actor of the context."""
    if agent is not None:
        return agent_author(agent)
    actor = context.current_actor()
    if actor.type in _PEOPLE:
        found = acting_agent(ticket.license_id)
        # A superuser who is no agent of this license still is a person, not the system.
        return agent_author(found) if found is not None else Author("agent", None, actor.email)
    if actor.type == context.EMAIL_MESSAGE:
        return client_author(ticket, actor.email)
    return Author("system", None, SYSTEM_NAME)


def message_author(ticket: Ticket, message: Message) -> Author:
    if message.author_type == "agent":
        if message.author_agent is not None:
            return agent_author(message.author_agent)
        return acting_author(ticket)
    if message.author_type == "client":
        actor = context.current_actor()
        return client_author(ticket, actor.email if actor.type == context.EMAIL_MESSAGE else "")
    return Author("system", None, SYSTEM_NAME)


class History:
    """The events of one write, saved together (one INSERT) in the order they were added."""

    def __init__(self, ticket: Ticket, now=None, *, created: bool = False):
        self.ticket = ticket
        self.created = created  # the events of a new ticket (webhooks tell tickets.create from .update)
        self.now = now or timezone.now()
        actor = context.current_actor()
        self.source_type = actor.source or SOURCE_BY_ACTOR.get(actor.type, "system")
        self.detailed_source = actor.type
        self.events: list[TicketEvent] = []

    def add(self, type: str, author: Author, *, payload=None, message: Message | None = None) -> None:
        self.events.append(
            TicketEvent(
                license_id=self.ticket.license_id,
                ticket_id=self.ticket.pk,
                type=type,
                created_at=message.created_at if message is not None else self.now,
                position=len(self.events),
                author_type=author.type,
                author_agent=author.agent,
                author_name=(author.name or "")[:254],
                source_type=self.source_type,
                detailed_source=self.detailed_source[:30],
                message=message,
                payload=payload or {},
            )
        )

    def message(self, message: Message) -> None:
        self.add("message", message_author(self.ticket, message), message=message)

    def change(self, type: str, author: Author, old, new) -> None:
        if old != new:
            self.add(type, author, payload={"old": old, "new": new})

    def relation(self, type: str, author: Author, before: set, after: set) -> None:
        added, removed = sorted(map(str, after - before)), sorted(map(str, before - after))
        if added or removed:
            self.add(type, author, payload={"added": added, "removed": removed})

    def record_update(self, author_agent, before: dict, relations_before: dict, given: dict) -> None:
        """The events of an update after its message's: each changed field, then each changed relation.

        `before` holds the fields' old values (and `assignment`'s old side when it was given), `relations_before`
        the old IDs of the relations given; `given` the relations' new objects. Saves the events."""
        ticket, author = self.ticket, None
        for name in ("status", "priority", "assignment", "teams", "tags", "followers", "silo"):
            if name in relations_before:
                old, new = relations_before[name], {obj.pk for obj in given[name]}
            elif name in before:
                old = before[name]
                new = (
                    assignment_side(ticket.assignment_team, ticket.assignment_agent)
                    if name == "assignment"
                    else getattr(ticket, name)
                )
            else:
                continue
            if old == new:
                continue
            author = author or acting_author(ticket, author_agent)
            if name in relations_before:
                self.relation(name, author, old, new)
            else:
                self.change(name, author, old, new)
        self.save()

    def save(self) -> list[TicketEvent]:
        if self.events:
            _insert.save(self.events, TicketEvent.objects.bulk_create)
            events_recorded.send(
                sender=TicketEvent, ticket=self.ticket, events=self.events, created=self.created
            )
        return self.events


# No save receivers: the events' INSERT built once per process (with a new ticket's metrics row: create
# 22.92 -> 22.66 M instructions, reply 31.17 -> 30.88 M, PATCH 14.42 -> 14.21 M; bench/README.md)
_insert = Insert(TicketEvent)


def assignment_side(team, agent) -> dict:
    """One side of an `assignment` event, shaped like the ticket's `assignment` (names as they were then)."""
    return {
        "team": None if team is None else {"ID": str(team.pk), "name": team.name},
        "agent": None if agent is None else {"ID": str(agent.pk), "name": agent.name},
    }
