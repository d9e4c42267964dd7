"""Writes lock rows in one order (docs/architecture.md, "Locks are taken in one order"), so that two concurrent
writes wait for each other instead of deadlocking (PostgreSQL would abort one of them, a 503 to retry).

Each test holds a first write at a point where it owns some locks and has more to take, starts a second write
that queues behind it, then lets the first go on: both must commit.
"""

import threading

import pytest
from django.contrib import admin
from django.db import connection
from django.test import RequestFactory

from accounts import services as account_services
from accounts.models import ROLE_NORMAL, ROLE_OWNER, Agent, Team
from tests.db_helpers import wait_for_a_lock_wait
from tests.factories import AgentFactory, TeamFactory, TicketFactory
from tickets import services, totals
from tickets.models import Ticket

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class Race:
    """A first write paused inside `module.name` (after it, or before it with `before=True`) while a second
    write runs into its locks."""

    def __init__(self, monkeypatch, module, name, *, before=False):
        self.paused, self.release, self.errors = threading.Event(), threading.Event(), []
        real = getattr(module, name)

        def pausing(*args, **kwargs):
            if before and threading.current_thread().name == "first":
                self._pause()
            result = real(*args, **kwargs)
            if not before and threading.current_thread().name == "first":
                self._pause()
            return result

        monkeypatch.setattr(module, name, pausing)

    def _pause(self):
        self.paused.set()
        self.release.wait(10)

    def _run(self, work):
        try:
            work()
        except Exception as error:  # noqa: BLE001 - reported by the test's assertion
            self.errors.append(error)
        finally:
            connection.close()

    def run(self, first, second) -> list:
        threads = [threading.Thread(target=self._run, args=(first,), name="first")]
        threads[0].start()
        assert self.paused.wait(10), "the first write never reached its pause"
        threads.append(threading.Thread(target=self._run, args=(second,), name="second"))
        threads[1].start()
        wait_for_a_lock_wait()
        self.release.set()
        for thread in threads:
            thread.join(15)
        return self.errors


@pytest.fixture
def assigned(owner):
    """A ticket assigned to a team and an agent, and a second agent of that team to take it over."""
    license = owner.license
    team = TeamFactory(license=license)
    agent, backup = AgentFactory(license=license, roles=[ROLE_NORMAL]), AgentFactory(license=license)
    for member in (agent, backup):
        member.teams.add(team)
    backup.autoassignment_teams.add(team)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": agent})
    return ticket, team, agent


@pytest.mark.parametrize("deletion", ["team", "agent"])
@pytest.mark.parametrize("write_kind", ["update", "delete"])
def test_a_deletion_whose_cascade_reaches_a_ticket_being_written_waits_for_it(
    assigned, monkeypatch, deletion, write_kind
):
    # given a write of the ticket that holds its row lock and has not finished (its totals' bookkeeping
    # raises the search generation at the end of its transaction)
    ticket, team, agent = assigned
    race = Race(monkeypatch, totals, "changing")

    def write():
        if write_kind == "update":
            services.ticket_update(ticket=Ticket.objects.get(pk=ticket.pk), priority=20)
        else:
            services.ticket_delete(ticket=Ticket.objects.get(pk=ticket.pk))

    def delete():
        if deletion == "team":
            account_services.team_delete(team=Team.objects.get(pk=team.pk))
        else:
            account_services.agent_delete(agent=Agent.objects.get(pk=agent.pk))

    # when the deletion, whose cascade updates that ticket, queues behind the write
    errors = race.run(write, delete)
    # then both commit, and the deletion's cascade saw the write
    assert errors == []
    ticket.refresh_from_db()
    assert ticket.priority == 20 if write_kind == "update" else ticket.silo == "trash"
    if deletion == "team":
        assert ticket.assignment_team_id is None
    else:
        assert ticket.assignment_agent_id != agent.pk


def test_the_admins_dry_run_of_several_deletions_waits_for_a_ticket_write(owner, monkeypatch):
    # given two teams with a ticket each, and a write of the second team's ticket that has not finished
    from accounts.admin.teams import TeamAdmin

    license = owner.license
    first, second = TeamFactory(license=license), TeamFactory(license=license)
    TicketFactory(license=license, teams=[first])
    ticket = TicketFactory(license=license, teams=[second])
    race = Race(monkeypatch, totals, "changing")
    refusals = []

    def write():
        services.ticket_update(ticket=Ticket.objects.get(pk=ticket.pk), priority=20)

    def dry_run():  # the confirmation page of a bulk deletion tries the deletions, then rolls them back
        teams = [Team.objects.get(pk=first.pk), Team.objects.get(pk=second.pk)]
        refusals.append(TeamAdmin(Team, admin.site).delete_refusals(RequestFactory().post("/"), teams))

    # when the dry run reaches the ticket being written
    errors = race.run(write, dry_run)
    # then both finish, and the dry run changed nothing
    assert errors == []
    assert refusals == [[]]
    assert Team.objects.filter(pk__in=[first.pk, second.pk]).count() == 2
    assert Ticket.objects.get(pk=ticket.pk).priority == 20


@pytest.mark.parametrize("second_write", ["delete", "update"])
def test_an_agents_change_and_its_deletion_wait_for_each_other(owner, monkeypatch, second_write):
    # given a change of an agent's roles paused where it checks that the license keeps an owner
    agent = AgentFactory(license=owner.license, roles=[ROLE_NORMAL])
    race = Race(monkeypatch, account_services, "_keep_an_owner", before=True)

    def promote():
        account_services.agent_update(agent=Agent.objects.get(pk=agent.pk), roles=[ROLE_NORMAL, ROLE_OWNER])

    def then():
        if second_write == "delete":
            account_services.agent_delete(agent=Agent.objects.get(pk=agent.pk))
        else:
            account_services.agent_update(agent=Agent.objects.get(pk=agent.pk), job_title="Lead")

    # when the deletion (or another change) of the same agent comes in
    errors = race.run(promote, then)
    # then both commit, one after the other
    assert errors == []
    if second_write == "delete":
        assert not Agent.objects.filter(pk=agent.pk).exists()
    else:
        assert Agent.objects.get(pk=agent.pk).roles == [ROLE_NORMAL, ROLE_OWNER]


def test_accepting_an_invitation_while_the_agent_is_deleted_waits_and_is_refused(owner, monkeypatch):
    # given an invited agent whose deletion is under way (it holds the license row, and deletes the invitation
    # with the agent)
    from templates_app.invitations import invitation_accept, invitation_token
    from templates_app.models import Invitation

    response = owner.client.post(
        "/v1/agents", {"email": "ivy@example.com", "roles": ["normal"], "status": "invited"}, format="json"
    )
    agent = Agent.objects.get(pk=response.json()["ID"])
    token = invitation_token(Invitation.objects.get(agent=agent))
    race = Race(monkeypatch, account_services, "_keep_an_owner")
    accepted = []

    def accept():
        try:
            accepted.append(invitation_accept(token=token, password="correct horse battery"))
        except Exception as error:  # noqa: BLE001 - the refusal is asserted below
            accepted.append(error)

    # when the invitee accepts meanwhile
    errors = race.run(lambda: account_services.agent_delete(agent=Agent.objects.get(pk=agent.pk)), accept)
    # then the deletion commits and the acceptance, which waited for it, is refused as a link that no longer works
    assert errors == []
    assert not Agent.objects.filter(pk=agent.pk).exists()
    (refusal,) = accepted
    assert getattr(refusal, "code", None) == "invitation_invalid", refusal
