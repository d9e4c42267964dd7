"""Writes of macros, and their application to a ticket.

Owners manage shared macros; every agent who writes (owners and normal agents) manages its own private ones,
which no one else sees. Limits: 100 actions per macro (tickets.actions), 500 shared macros per license and
500 private ones per agent (409 naming the limit).

`macro_apply` is one ticket write: the actions become the arguments of ONE `tickets.services.ticket_update`,
inside the same unit of work as the ticket's lock (one transaction, one batch of events, one `tickets.update`
webhook); an action that cannot apply is a 409 naming it, and nothing changes.
"""

from __future__ import annotations

from accounts.models import Agent, License
from accounts.services import same_license, stamp_create, stamp_update
from helpdesk.errors import Conflict, Forbidden, field_error
from helpdesk.transactions import unit_of_work
from tickets import actions as ticket_actions
from tickets import services as ticket_services
from tickets.macros.models import PRIVATE, SHARED, Macro
from tickets.models import Ticket

MAX_SHARED = 500
MAX_PRIVATE_PER_AGENT = 500


def _check_may_write(actor: Agent | None, visibility: str) -> None:
    """`actor` None: the admin (its own permissions decided)."""
    if actor is not None and visibility == SHARED and not actor.is_owner:
        raise Forbidden("Only owners manage shared macros; make it private.")


def _check_room(license: License, visibility: str, agent: Agent | None) -> None:
    macros = Macro.objects.for_license(license)
    if visibility == SHARED:
        if macros.filter(visibility=SHARED).count() >= MAX_SHARED:
            raise Conflict(f"The limit of {MAX_SHARED} shared macros is reached.", code="limit_macros")
    elif macros.filter(visibility=PRIVATE, agent=agent).count() >= MAX_PRIVATE_PER_AGENT:
        raise Conflict(
            f"The limit of {MAX_PRIVATE_PER_AGENT} private macros per agent is reached.", code="limit_macros"
        )


def _owner_of(license: License, visibility: str, agent: Agent | None, actor: Agent | None) -> Agent | None:
    if visibility == SHARED:
        return None
    agent = agent or actor
    if agent is None:
        raise field_error("agentID", "A private macro needs its agent.")
    same_license(license, [agent], "agentID")
    return agent


@unit_of_work
def macro_create(
    *,
    license: License,
    name: str,
    actions,
    visibility: str = PRIVATE,
    agent: Agent | None = None,
    actor: Agent | None = None,
) -> Macro:
    """`actor`: the agent writing through the API (a private macro is its own); the admin names `agent`."""
    _check_may_write(actor, visibility)
    agent = _owner_of(license, visibility, agent, actor)
    macro = Macro(
        license=license,
        name=name,
        visibility=visibility,
        agent=agent,
        actions=ticket_actions.validate(license=license, actions=actions, agent=agent),
    )
    _check_room(license, visibility, agent)
    stamp_create(macro)
    macro.save()
    return macro


@unit_of_work
def macro_update(
    *,
    macro: Macro,
    name: str | None = None,
    actions=None,
    visibility: str | None = None,
    agent: Agent | None = None,
    actor: Agent | None = None,
) -> Macro:
    _check_may_write(actor, macro.visibility)
    license = macro.license
    if visibility is not None and visibility != macro.visibility:
        _check_may_write(actor, visibility)
        macro.agent = _owner_of(license, visibility, agent, actor)
        macro.visibility = visibility
        _check_room(license, visibility, macro.agent)
    if name is not None:
        macro.name = name
    if actions is not None:
        macro.actions = ticket_actions.validate(license=license, actions=actions, agent=macro.agent)
    stamp_update(macro)
    macro.save()
    return macro


@unit_of_work
def macro_delete(*, macro: Macro, actor: Agent | None = None) -> None:
    _check_may_write(actor, macro.visibility)
    macro.delete()


@unit_of_work
def macro_apply(*, macro: Macro, ticket: Ticket, agent: Agent | None = None) -> Ticket:
    """Every action of `macro` on `ticket`, as one ticket write by `agent`."""
    # Locked before the actions read its tags, followers and team (ticket_update then reads it again, locked).
    locked = (
        Ticket.objects.select_for_update(no_key=True, of=("self",))
        .select_related("license", "assignment_team")
        .get(pk=ticket.pk)
    )
    changes = ticket_actions.plan(ticket=locked, actions=macro.actions, agent=agent)
    if "message" in changes:  # a canned response's files go with its reply
        changes["transaction_id"] = ticket_actions.canned_files_transaction(
            ticket=locked, actions=macro.actions
        )
    if changes:
        locked = ticket_services.ticket_update(ticket=locked, author_agent=agent, automation=True, **changes)
    return ticket_actions.follow_up(ticket=locked, actions=macro.actions, by_agent=agent)
