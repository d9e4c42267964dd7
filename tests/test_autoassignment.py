"""Autoassignment: new tickets of a team go to its eligible agent with the least work, ties in turn, with a
system `assignment` event; an agent who leaves gives their open tickets back to the team; concurrent creates
never pile onto one agent."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from accounts import services as accounts_services
from accounts.models import STATUS_INVITED, Agent, AutoassignmentMembership
from tests.factories import AgentFactory, TeamFactory, TicketFactory
from tickets.models import Ticket, TicketEvent


def _team(license, *agents):
    team = TeamFactory(license=license)
    for agent in agents:
        AutoassignmentMembership.objects.create(agent=agent, team=team)
    return team


def _agent(license, *, autoassignment=True, **fields):
    return AgentFactory(license=license, autoassignment=autoassignment, **fields)


def _new(license, team, **kwargs):
    return TicketFactory(license=license, teams=[team], **kwargs)


@pytest.mark.django_db
def test_a_new_ticket_goes_to_the_eligible_agent_with_a_system_assignment_event(license):
    alice = _agent(license)
    team = _team(license, alice)
    ticket = _new(license, team)
    ticket.refresh_from_db()
    assert (ticket.assignment_agent_id, ticket.assignment_team_id) == (alice.pk, team.pk)
    event = TicketEvent.objects.get(ticket=ticket, type="assignment")
    assert event.author_type == "system"
    assert event.payload["new"]["agent"] == {"ID": str(alice.pk), "name": alice.name}
    assert event.payload["old"] == {"team": None, "agent": None}


@pytest.mark.django_db
def test_the_agent_with_the_fewest_open_and_pending_tickets_wins(license):
    busy, free = _agent(license), _agent(license)
    team = _team(license, busy, free)
    other = _team(license)
    for status in ("open", "pending"):
        TicketFactory(license=license, teams=[other], assignment={"agent": busy}, status=status)
    # solved and closed work does not count
    for status in ("solved", "closed", "closed"):
        TicketFactory(license=license, teams=[other], assignment={"agent": free}, status=status)
    ticket = _new(license, team)
    assert Ticket.objects.get(pk=ticket.pk).assignment_agent_id == free.pk


@pytest.mark.django_db
def test_ties_go_round_robin(license):
    agents = [_agent(license) for _ in range(3)]
    team = _team(license, *agents)
    chosen = []
    for _ in range(6):
        ticket = _new(license, team)
        chosen.append(Ticket.objects.get(pk=ticket.pk).assignment_agent_id)
    assert set(chosen[:3]) == {a.pk for a in agents}
    assert chosen[3:] == chosen[:3]  # the same turn again once all have one more


@pytest.mark.django_db
def test_ineligible_agents_are_skipped_and_none_eligible_leaves_the_ticket_unassigned(license):
    off = _agent(license, autoassignment=False)
    invited = _agent(license, status=STATUS_INVITED)
    not_linked = _agent(license)
    team = _team(license, off, invited)
    AutoassignmentMembership.objects.create(agent=not_linked, team=_team(license))
    ticket = _new(license, team)
    ticket.refresh_from_db()
    assert ticket.assignment_agent_id is None
    assert not TicketEvent.objects.filter(ticket=ticket, type="assignment").exists()


@pytest.mark.django_db
def test_a_ticket_created_with_an_agent_keeps_them(license):
    alice, bob = _agent(license), _agent(license)
    team = _team(license, alice)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": bob})
    assert Ticket.objects.get(pk=ticket.pk).assignment_agent_id == bob.pk


@pytest.mark.django_db
def test_the_default_team_assigns_tickets_created_through_the_api(owner, license):
    alice = _agent(license)
    AutoassignmentMembership.objects.create(agent=alice, team=license.default_team)
    body = {"subject": "Help", "requester": {"email": "jane@example.com"}, "message": {"text": "Hi"}}
    response = owner.client.post("/v1/tickets", body, format="json")
    assert response.status_code == 201, response.content
    doc = owner.client.get(f"/v1/tickets/{response.json()['ID']}").json()
    assert doc["assignment"]["agent"]["ID"] == str(alice.pk)
    assert doc["assignment"]["team"]["ID"] == str(license.default_team_id)
    events = [e for e in doc["events"] if e["type"] == "assignment"]
    assert len(events) == 1 and events[0]["author"]["type"] == "system"


def _open_tickets_of(agent):
    return Ticket.objects.filter(assignment_agent_id=agent.pk, status__in=["open", "pending"]).count()


@pytest.mark.django_db
def test_a_deactivated_agent_gives_their_open_tickets_back_to_the_pool(license):
    alice, bob = _agent(license), _agent(license)
    team = _team(license, alice)
    tickets = [_new(license, team) for _ in range(2)]
    solved = _new(license, team, status="solved")
    AutoassignmentMembership.objects.create(agent=bob, team=team)
    accounts_services.agent_update(agent=alice, status=STATUS_INVITED)
    for ticket in tickets:
        ticket.refresh_from_db()
        assert ticket.assignment_agent_id == bob.pk
        event = TicketEvent.objects.filter(ticket=ticket, type="assignment").order_by("created_at").last()
        assert event.author_type == "system"
        assert event.payload["old"]["agent"]["ID"] == str(alice.pk)
        assert event.payload["new"]["agent"]["ID"] == str(bob.pk)
    assert Ticket.objects.get(pk=solved.pk).assignment_agent_id == alice.pk  # finished work stays theirs


@pytest.mark.django_db
def test_a_deleted_agent_leaves_tickets_unassigned_when_nobody_else_is_eligible(license):
    alice = _agent(license)
    team = _team(license, alice)
    ticket = _new(license, team)
    accounts_services.agent_delete(agent=alice)
    ticket.refresh_from_db()
    assert ticket.assignment_agent_id is None and ticket.assignment_team_id == team.pk
    last = TicketEvent.objects.filter(ticket=ticket, type="assignment").order_by("created_at").last()
    assert last.payload["new"] == {"team": {"ID": str(team.pk), "name": team.name}, "agent": None}


@pytest.mark.django_db
def test_an_agent_removed_from_a_team_releases_only_that_teams_tickets(license):
    """Removed from the team's members (teamIDs); the next test: from its autoassignment list."""
    alice, bob = _agent(license), _agent(license)
    sales, support = _team(license, alice), _team(license, alice)
    accounts_services.agent_update(agent=alice, teams=[sales, support])
    sales_ticket, support_ticket = _new(license, sales), _new(license, support)
    AutoassignmentMembership.objects.create(agent=bob, team=sales)
    accounts_services.agent_update(agent=alice, teams=[support])
    assert Ticket.objects.get(pk=sales_ticket.pk).assignment_agent_id == bob.pk
    assert Ticket.objects.get(pk=support_ticket.pk).assignment_agent_id == alice.pk


@pytest.mark.django_db
def test_an_agent_taken_off_a_teams_autoassignment_releases_its_tickets(license):
    alice, bob = _agent(license), _agent(license)
    team = _team(license, alice)
    ticket = _new(license, team)
    accounts_services.team_update(team=team, autoassignment_agents=[bob])
    assert Ticket.objects.get(pk=ticket.pk).assignment_agent_id == bob.pk
    accounts_services.agent_update(agent=bob, autoassignment_teams=[])
    assert Ticket.objects.get(pk=ticket.pk).assignment_agent_id is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_tickets_created_at_once_spread_over_the_agents(license):
    agents = [_agent(license) for _ in range(4)]
    team = _team(license, *agents)
    barrier = threading.Barrier(8)
    errors = []

    def create():
        try:
            barrier.wait()
            TicketFactory(license=license, teams=[team])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()  # the thread's own connection

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    loads = sorted(_open_tickets_of(agent) for agent in Agent.objects.filter(pk__in=[a.pk for a in agents]))
    assert loads == [2, 2, 2, 2]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_autoassignments_at_once_read_each_others_assignment(license, monkeypatch):
    """The team's row lock alone keeps two autoassignments of one team from reading the same loads (today the
    callers also hold other locks: the license's ticket sequence, the audit chain); a pause between choosing
    and committing makes the race certain without it."""
    import time

    from tickets import autoassign
    from tickets.events import History

    idle, busy = _agent(license), _agent(license)
    team = _team(license)
    waiting = [_new(license, team) for _ in range(2)]  # nobody eligible yet: unassigned
    TicketFactory(license=license, teams=[_team(license)], assignment={"agent": busy})
    for agent in (idle, busy):
        AutoassignmentMembership.objects.create(agent=agent, team=team)
    real_choose = autoassign.choose_agent

    def slow_choose(*args, **kwargs):
        chosen = real_choose(*args, **kwargs)
        time.sleep(0.3)
        return chosen

    monkeypatch.setattr(autoassign, "choose_agent", slow_choose)
    barrier, errors = threading.Barrier(2), []

    def assign(ticket):
        try:
            barrier.wait()
            with transaction.atomic():
                locked = Ticket.objects.select_for_update().get(pk=ticket.pk)
                history = History(locked)
                autoassign.autoassign(locked, history=history)
                history.save()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=assign, args=(ticket,)) for ticket in waiting]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    # idle (0) gets the first ticket; then both have one open ticket and the turn goes to busy
    assert (_open_tickets_of(idle), _open_tickets_of(busy)) == (1, 2)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("eligible", [False, True])
def test_only_a_team_with_an_eligible_agent_is_locked_by_its_new_ticket(license, eligible):
    """Another transaction holds the team's row: a new ticket of a team nobody is autoassigned in does not wait
    for it (its tickets do not queue on each other); one whose team has an eligible agent does (lock_timeout)."""
    from django.db import OperationalError

    from accounts.models import Team

    team = _team(license, _agent(license, autoassignment=eligible))
    held, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                Team.objects.select_for_update(no_key=True).get(pk=team.pk)
                held.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '500ms'")
        if eligible:
            with pytest.raises(OperationalError, match="lock timeout"):
                _new(license, team)
        else:
            assert _new(license, team).assignment_agent_id is None
    finally:
        release.set()
        holder.join(10)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert Ticket.objects.filter(license=license).count() == (0 if eligible else 1)


@pytest.mark.django_db
def test_a_ticket_that_came_by_email_is_assigned_by_the_system(license):
    from helpdesk.context import EMAIL_MESSAGE, Actor, acting_as
    from tickets import services as ticket_services

    alice = _agent(license)
    team = _team(license, alice)
    with acting_as(Actor(type=EMAIL_MESSAGE, email="jane@example.com")):
        ticket = ticket_services.ticket_create(
            license=license,
            subject="Mail",
            requester={"email": "jane@example.com"},
            message={"text": "Hello"},
            author_type="client",
            teams=[team],
        )
    assert Ticket.objects.get(pk=ticket.pk).assignment_agent_id == alice.pk
    message, assignment = TicketEvent.objects.filter(ticket=ticket).order_by("created_at", "position")
    assert (message.type, message.author_type) == ("message", "client")
    assert (assignment.type, assignment.author_type, assignment.source_type) == (
        "assignment",
        "system",
        "email",
    )


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_rule_assigning_a_new_ticket_locks_the_team_before_the_tickets_rollup_rows(license):
    """Every write locks the reports' rollup rows after everything else it locks (the flush stage of its unit
    of work): a mail whose rule puts its new ticket in a team takes the team's row first, as a create in that
    team does, so neither holds the license's "new" rows while it waits for the team's (the deadlock a helper
    found when a license's mail stopped queuing on its ticket-number row: bench/README.md, sixth round)."""
    from django.test.utils import CaptureQueriesContext

    from accounts.models import Team
    from tickets.reports.models import ReportRollup
    from tickets.rules import services as rules

    alice = _agent(license)
    team = _team(license, alice)
    rules.rule_create(
        license=license,
        name="To the team",
        triggers=[{"type": "event", "op": "is", "value": "created"}],
        actions=[{"type": "assignTeam", "value": str(team.pk)}, {"type": "autoassign", "value": None}],
    )
    with CaptureQueriesContext(connection) as queries:
        ticket = TicketFactory(license=license)
    assert Ticket.objects.get(pk=ticket.pk).assignment_agent_id == alice.pk
    statements = [query["sql"] for query in queries.captured_queries]
    team_locked = [
        i for i, sql in enumerate(statements) if Team._meta.db_table in sql and "FOR NO KEY" in sql
    ]
    rollups = [i for i, sql in enumerate(statements) if ReportRollup._meta.db_table in sql]
    assert team_locked and rollups, statements
    assert max(team_locked) < min(rollups) and len(rollups) == 1  # the create's and the rule's: one upsert
