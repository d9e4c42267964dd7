"""Agents' e-mail notifications: an assignment tells the assignee (or the team), a requester's message tells the
assignee (or the team), as the team's settings say; never an agent who turned e-mail notifications off; a burst
of replies is one e-mail, then one digest a window later."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts import services as accounts_services
from templates_app import notifications
from templates_app.models import AgentNotification, OutboundMessage
from tests.factories import AgentFactory, TeamFactory, TicketFactory
from tickets import services as ticket_services

pytestmark = pytest.mark.usefixtures("eager_tasks")


def _team(license, agents=(), **settings):
    team = TeamFactory(license=license)
    accounts_services.team_update(team=team, settings=settings)
    for agent in agents:
        agent.teams.add(team)
    return team


def _mails(agent):
    return list(OutboundMessage.objects.filter(kind="notification", to=agent.email).order_by("created_at"))


def _client_writes(ticket, callbacks, text="Any news?"):
    with callbacks(execute=True):
        ticket_services.ticket_update(ticket=ticket, message={"text": text}, author_type="client")


@pytest.mark.django_db
def test_the_assigned_agent_gets_an_email(owner, agent, license, django_capture_on_commit_callbacks):
    team = _team(license, [agent.agent], notifyTeamAboutAssignedTicket=True)
    ticket = TicketFactory(license=license, teams=[team], subject="Broken printer")
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.patch(
            f"/v1/tickets/{ticket.pk}",
            {"assignment": {"team": {"ID": str(team.pk)}, "agent": {"ID": str(agent.agent.pk)}}},
            format="json",
        )
    assert response.status_code == 200, response.content
    [mail] = _mails(agent.agent)
    assert f"[#{ticket.short_id}] Assigned to you: Broken printer" == mail.subject
    assert "assigned to you" in mail.text and f"/admin/tickets/ticket/{ticket.pk}/change/" in mail.text
    assert _mails(owner.agent) == []  # the one who assigned is not told
    # assigning to the same agent again, or unassigning, tells nobody
    for assignment in ({"agent": {"ID": str(agent.agent.pk)}}, {"agent": None}):
        with django_capture_on_commit_callbacks(execute=True):
            response = owner.client.patch(
                f"/v1/tickets/{ticket.pk}", {"assignment": assignment}, format="json"
            )
        assert response.status_code == 200, response.content
    assert AgentNotification.objects.count() == 1


@pytest.mark.django_db
def test_a_team_assignment_tells_the_teams_agents(license, django_capture_on_commit_callbacks):
    members = [AgentFactory(license=license) for _ in range(2)]
    muted = AgentFactory(license=license, settings={"emailNotificationsActive": False})
    team = _team(license, [*members, muted], notifyTeamAboutAssignedTicket=True)
    with django_capture_on_commit_callbacks(execute=True):
        TicketFactory(license=license, teams=[team], assignment={"team": team})
    assert [len(_mails(member)) for member in members] == [1, 1]
    assert _mails(muted) == []


@pytest.mark.django_db
def test_no_assignment_email_when_the_team_setting_is_off(license, django_capture_on_commit_callbacks):
    alice = AgentFactory(license=license)
    team = _team(license, [alice], notifyTeamAboutAssignedTicket=False)
    with django_capture_on_commit_callbacks(execute=True):
        TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": alice})
    assert _mails(alice) == [] and not AgentNotification.objects.exists()


@pytest.mark.django_db
def test_an_agent_with_email_notifications_off_gets_none(license, django_capture_on_commit_callbacks):
    alice = AgentFactory(license=license, settings={"emailNotificationsActive": False})
    team = _team(license, [alice], notifyTeamAboutAssignedTicket=True, notifyTeamAboutRequestersActivity=True)
    with django_capture_on_commit_callbacks(execute=True):
        ticket = TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": alice})
    _client_writes(ticket, django_capture_on_commit_callbacks)
    assert _mails(alice) == [] and not AgentNotification.objects.exists()


@pytest.mark.django_db
def test_the_requesters_message_tells_the_assignee_else_the_team(license, django_capture_on_commit_callbacks):
    alice, bob = AgentFactory(license=license), AgentFactory(license=license)
    team = _team(
        license, [alice, bob], notifyTeamAboutAssignedTicket=False, notifyTeamAboutRequestersActivity=True
    )
    assigned = TicketFactory(
        license=license, teams=[team], assignment={"team": team, "agent": alice}, subject="Assigned one"
    )
    unassigned = TicketFactory(license=license, teams=[team], subject="Pool one")
    AgentNotification.objects.all().delete()  # the new tickets' own messages
    OutboundMessage.objects.filter(kind="notification").delete()
    _client_writes(assigned, django_capture_on_commit_callbacks)
    assert [m.subject for m in _mails(alice)] == [f"[#{assigned.short_id}] New activity: Assigned one"]
    assert _mails(bob) == []
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=61)):
        _client_writes(unassigned, django_capture_on_commit_callbacks)
    assert len(_mails(alice)) == 2 and len(_mails(bob)) == 1
    assert "1 new message from Client" in _mails(bob)[0].text


@pytest.mark.django_db
def test_no_activity_email_when_the_team_setting_is_off(license, django_capture_on_commit_callbacks):
    alice = AgentFactory(license=license)
    team = _team(
        license, [alice], notifyTeamAboutAssignedTicket=False, notifyTeamAboutRequestersActivity=False
    )
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": alice})
    _client_writes(ticket, django_capture_on_commit_callbacks)
    assert _mails(alice) == []


@pytest.mark.django_db
def test_a_burst_of_fifty_replies_is_one_email_then_one_digest(
    license, django_capture_on_commit_callbacks, settings
):
    settings.NOTIFICATION_BATCH_SECONDS = 60
    alice = AgentFactory(license=license)
    team = _team(
        license, [alice], notifyTeamAboutAssignedTicket=False, notifyTeamAboutRequestersActivity=True
    )
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as clock:
        ticket = TicketFactory(
            license=license, teams=[team], assignment={"team": team, "agent": alice}, subject="Burst"
        )
        AgentNotification.objects.all().delete()
        for n in range(50):
            _client_writes(ticket, django_capture_on_commit_callbacks, text=f"reply {n}")
            clock.shift(timedelta(seconds=1))  # 50 replies within 50 seconds
        mails = _mails(alice)
        assert len(mails) == 1 and "1 new message" in mails[0].text
        assert notifications.send_due() == 0  # the window (60 s since the first mail) is not over
        clock.move_to(start + timedelta(seconds=61))
        assert notifications.send_due() == 1
        mails = _mails(alice)
        assert len(mails) == 2 and "49 new messages from Client" in mails[1].text
        assert not AgentNotification.objects.filter(sent_at__isnull=True).exists()
        assert notifications.send_due() == 0


@pytest.mark.django_db
def test_the_purge_takes_a_tickets_pending_notifications_with_it(license):
    from tickets import purge

    alice = AgentFactory(license=license)
    ticket = TicketFactory(license=license, assignment={"agent": alice})
    assert AgentNotification.objects.filter(ticket=ticket).exists()  # assigned: a notification waits
    old = datetime.now(UTC) - timedelta(days=31)
    TicketFactory._meta.model.objects.filter(pk=ticket.pk).update(silo="trash", updated_at=old)
    purge.purge_expired(trigger="manual")
    assert not TicketFactory._meta.model.objects.filter(pk=ticket.pk).exists()
    assert not AgentNotification.objects.filter(ticket_id=ticket.pk).exists()


@pytest.mark.django_db
def test_the_link_is_the_apps_ticket_page_which_any_agent_recipient_opens(
    agent, license, settings, django_capture_on_commit_callbacks
):
    # Every active agent signs in to the console (issue 30): a normal agent, no staff flag, opens the link.
    from tests.admin_helpers import signed_in

    settings.HELPDESK_APP_URL = "https://desk.example.com/"
    team = _team(license, [agent.agent], notifyTeamAboutRequestersActivity=True)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": agent.agent})
    OutboundMessage.objects.filter(kind="notification").delete()
    _client_writes(ticket, django_capture_on_commit_callbacks)
    [mail] = _mails(agent.agent)
    path = f"/admin/tickets/ticket/{ticket.pk}/change/"
    assert f"\nhttps://desk.example.com{path}" in mail.text
    assert not agent.account.is_staff
    page = signed_in(agent.account).get(path)
    assert page.status_code == 200 and ticket.subject in page.content.decode()
