"""Autoassignment: a new ticket of a team without an agent goes to one of the team's eligible agents.

Eligible: the agent is `active`, has `autoassignment` on, and is linked to the team for autoassignment (one
AutoassignmentMembership row is both the agent's `autoassignmentTeamIDs` and the team's
`autoassignmentAgentIDs`). Among them the one with the fewest open and pending tickets (in the `tickets` silo,
over the whole license: an agent's load is all their work) wins; ties go round-robin by the team's cursor (the
membership's `last_assigned_at`, oldest first, never-assigned first). None eligible: the ticket stays
unassigned.

Concurrency: choose-and-assign runs under the team's row lock (SELECT ... FOR NO KEY UPDATE), held to the end
of the write's transaction, so two tickets created at once for one team are assigned one after the other and the
second reads the counts with the first's assignment committed (PostgreSQL's READ COMMITTED takes a new snapshot
per statement, after the lock is granted). A team with no eligible agent is not locked (`_lock_team`): its new
tickets stay unassigned, and do not wait for each other.

The change is an `assignment` event whose author is the system, whoever created the ticket.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.db.models import Count, Exists
from django.utils import timezone

from accounts.models import STATUS_ACTIVE, Agent, AutoassignmentMembership, Team
from helpdesk.compiled import Compiled
from helpdesk.transactions import unit_of_work
from tickets import locks, totals
from tickets.events import SYSTEM_NAME, Author, History, assignment_side
from tickets.models import Ticket
from tickets.signals import ticket_assigned

LOAD_STATUSES = ("open", "pending")  # what counts as an agent's current work
ASSIGNABLE_STATUSES = ("open", "pending", "onhold")  # a solved or closed ticket needs nobody
SYSTEM = Author("system", None, SYSTEM_NAME)


def pool_team(ticket: Ticket) -> Team | None:
    """The team whose pool the ticket is in: its assigned team, else its only team (several: ambiguous)."""
    if ticket.assignment_team_id:
        return ticket.assignment_team
    teams = list(ticket.teams.all()[:2])
    return teams[0] if len(teams) == 1 else None


def _eligible(team: Team, exclude=()):
    """The memberships of `team`'s eligible agents (but those of `exclude`)."""
    return AutoassignmentMembership.objects.filter(
        team_id=team.pk,
        agent__status=STATUS_ACTIVE,
        agent__autoassignment=True,
        agent__license_id=team.license_id,
    ).exclude(agent_id__in=[getattr(a, "pk", a) for a in exclude])


def _lock_team(team_id, license_id, exclude=()):
    """Lock the team's row if it has an eligible agent: [(its ID,)] then, else [] (nobody eligible, or it is
    gone) and nothing locked.

    A team nobody is autoassigned in (most) is not locked: its row lock, held to the end of the write, made
    every new ticket of the team wait for the one before it to commit (one of the locks a license's new tickets
    by mail queued on: bench/README.md "Issue 34: sixth round"). A returned row is a locked one. The condition
    does not depend on the row: PostgreSQL reads it once, before any wait for the lock, as the annotation that
    stood here was read; `choose_agent` reads the agents again under the lock."""
    return (
        Team.objects.select_for_update(no_key=True)
        .filter(Exists(_eligible(Team(pk=team_id, license_id=license_id), exclude)), pk=team_id)
        .values_list("id")
    )


_lock_team_compiled = Compiled(_lock_team, uuid.UUID, int)


def choose_agent(team: Team, *, exclude=()) -> Agent | None:
    """The eligible agent of `team` with the least load, ties by the team's round-robin cursor.

    Call under the team's row lock (`autoassign` takes it)."""
    memberships = list(_eligible(team, exclude).select_related("agent"))
    if not memberships:
        return None
    loads = dict(
        Ticket.objects.filter(
            license_id=team.license_id,
            silo="tickets",
            status__in=LOAD_STATUSES,
            assignment_agent_id__in=[m.agent_id for m in memberships],
        )
        .values("assignment_agent_id")
        .annotate(n=Count("id"))
        .values_list("assignment_agent_id", "n")
    )
    never = datetime(1970, 1, 1, tzinfo=UTC)
    chosen = min(
        memberships,
        key=lambda m: (
            loads.get(m.agent_id, 0),
            m.last_assigned_at or never,
            m.agent.created_at,
            str(m.agent_id),
        ),
    )
    AutoassignmentMembership.objects.filter(pk=chosen.pk).update(last_assigned_at=timezone.now())
    return chosen.agent


def autoassign(ticket: Ticket, *, history: History, exclude=()) -> Agent | None:
    """Give `ticket` (locked or new, in the caller's transaction) to an eligible agent of its pool team.

    Adds the `assignment` event to `history` (the caller saves it) and sends `ticket_assigned`."""
    if ticket.assignment_agent_id or ticket.silo != "tickets" or ticket.status not in ASSIGNABLE_STATUSES:
        return None
    team = pool_team(ticket)
    if team is None:
        return None
    # serializes choose-and-assign per team. The locking statement also says whether the team has an eligible
    # agent at all: a team without autoassignment (most) costs this one statement, not two. Issue 34: a
    # statement less per new ticket, API and mail in (bench/README.md "Issue 34: writes, continued").
    if exclude:
        locked = _lock_team(team.pk, team.license_id, exclude)
    else:  # a new ticket's: compiled once (helpdesk.compiled; the ORM's compiling cost ~1 ms of CPU)
        locked = _lock_team_compiled.rows(team.pk, team.license_id)
    if not locked:
        return None
    team = Team.objects.get(pk=team.pk)  # under its lock: as it is now
    agent = choose_agent(team, exclude=exclude)
    if agent is None:
        return None
    before = assignment_side(ticket.assignment_team, ticket.assignment_agent)
    ticket.assignment_team, ticket.assignment_agent = team, agent
    Ticket.objects.filter(pk=ticket.pk).update(assignment_team=team, assignment_agent=agent)
    history.change("assignment", SYSTEM, before, assignment_side(team, agent))
    # (the pool team is already one of the ticket's teams: the services keep the assigned team among them)
    ticket_assigned.send(sender=Ticket, ticket=ticket, team=team, agent=agent, by_agent=None)
    return agent


@unit_of_work
def tickets_release(*, agent: Agent, team_ids=None) -> int:
    """The agent's open tickets (of `team_ids`, else all) go back to their team's pool and are assigned again.

    Called (through accounts.signals.agent_leaving) in the transaction that deactivates, deletes or removes
    the agent from teams. Returns how many tickets were released."""
    tickets = Ticket.objects.filter(
        license_id=agent.license_id,
        assignment_agent_id=agent.pk,
        silo="tickets",
        status__in=ASSIGNABLE_STATUSES,
    )
    if team_ids is not None:
        tickets = tickets.filter(assignment_team_id__in=list(team_ids))
    released = 0
    if team_ids is None:  # the agent leaves: its deletion would next lock the tickets it follows; all at once
        locks.lock_reached_tickets(agent)
    locked = list(
        tickets.select_for_update(no_key=True, of=("self",))
        .select_related("license", "assignment_team")
        .order_by("pk")
    )
    totals.changing(agent.license_id, [ticket.pk for ticket in locked])
    for ticket in locked:
        history = History(ticket)
        before = assignment_side(ticket.assignment_team, agent)
        ticket.assignment_agent = None
        Ticket.objects.filter(pk=ticket.pk).update(assignment_agent=None, updated_at=history.now)
        if autoassign(ticket, history=history, exclude=[agent]) is None:
            history.change("assignment", SYSTEM, before, assignment_side(ticket.assignment_team, None))
        else:
            # one event from the leaving agent to the new one, not two
            history.events[-1].payload["old"] = before
        history.save()
        released += 1
    return released


def on_agent_leaving(sender, *, agent, team_ids=None, **kwargs) -> None:
    """Receiver of accounts.signals.agent_leaving."""
    tickets_release(agent=agent, team_ids=team_ids)
