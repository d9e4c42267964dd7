"""tagReminder: a team that has it on refuses to solve an untagged ticket (409 `tag_required`, a form error in
the admin) unless `force` is given; maxChildTicketsPerTicket bounds merges."""

from __future__ import annotations

import pytest

from accounts import services as accounts_services
from tests.admin_helpers import error_text, form_data
from tests.factories import TagFactory, TeamFactory, TicketFactory
from tickets.models import Ticket, TicketEvent


@pytest.fixture
def reminding_team(license):
    team = TeamFactory(license=license, name="Billing")
    return accounts_services.team_update(team=team, settings={"tagReminder": True})


@pytest.fixture
def ticket(license, reminding_team):
    return TicketFactory(license=license, teams=[reminding_team])


def _solve(persona, ticket, **extra):
    return persona.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved", **extra}, format="json")


@pytest.mark.django_db
def test_solving_an_untagged_ticket_is_refused_with_tag_required(agent, ticket):
    response = _solve(agent, ticket)
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "tag_required" and "Billing" in body["error"] and "force" in body["error"]
    assert Ticket.objects.get(pk=ticket.pk).status == "open"
    assert not TicketEvent.objects.filter(ticket=ticket, type="status").exists()


@pytest.mark.django_db
def test_force_solves_it_anyway(agent, ticket):
    response = _solve(agent, ticket, force=True)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "solved"


@pytest.mark.django_db
def test_force_must_be_a_boolean(agent, ticket):
    response = _solve(agent, ticket, force="yes")
    assert response.status_code == 400 and "force" in response.json()["details"]
    assert Ticket.objects.get(pk=ticket.pk).status == "open"


@pytest.mark.django_db
def test_a_tag_given_in_the_same_patch_or_already_there_is_enough(agent, license, ticket, reminding_team):
    tag = TagFactory(license=license)
    assert _solve(agent, ticket, tagIDs=[str(tag.pk)]).status_code == 200
    tagged = TicketFactory(license=license, teams=[reminding_team], tags=[tag])
    assert _solve(agent, tagged).status_code == 200


@pytest.mark.django_db
def test_removing_the_last_tag_while_solving_is_refused(agent, license, reminding_team):
    tagged = TicketFactory(license=license, teams=[reminding_team], tags=[TagFactory(license=license)])
    response = _solve(agent, tagged, tagIDs=[])
    assert response.status_code == 409 and response.json()["code"] == "tag_required"


@pytest.mark.django_db
def test_teams_without_the_reminder_solve_untagged_tickets(agent, license):
    plain = TicketFactory(license=license)  # the default team: tagReminder off
    assert _solve(agent, plain).status_code == 200


@pytest.mark.django_db
def test_the_assigned_teams_reminder_counts(agent, license, reminding_team):
    ticket = TicketFactory(license=license)
    body = {"assignment": {"team": {"ID": str(reminding_team.pk)}, "agent": None}}
    assert _solve(agent, ticket, **body).status_code == 409


@pytest.mark.django_db
def test_the_admin_shows_the_same_as_a_form_error(superuser, ticket):
    url = f"/admin/tickets/ticket/{ticket.pk}/change/"
    response = superuser.post(url, form_data(superuser.get(url)) | {"status": "solved"})
    assert response.status_code == 200
    assert "asks for a tag" in error_text(response)
    assert Ticket.objects.get(pk=ticket.pk).status == "open"


@pytest.mark.django_db
def test_merges_stop_at_max_child_tickets_per_ticket(owner, license):
    accounts_services.license_update(license=license, data={"settings": {"maxChildTicketsPerTicket": 2}})
    parent, *children = [TicketFactory(license=license) for _ in range(4)]
    url = f"/v1/tickets/{parent.pk}/childTickets"
    for child in children[:2]:
        response = owner.client.post(url, {"childTicketID": str(child.pk)}, format="json")
        assert response.status_code == 201, response.content
    response = owner.client.post(url, {"childTicketID": str(children[2].pk)}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "max_child_tickets"
    assert "2" in response.json()["error"]
    assert Ticket.objects.get(pk=children[2].pk).parent_id is None


@pytest.mark.django_db
def test_the_admins_checkbox_solves_it_anyway(superuser, ticket):
    url = f"/admin/tickets/ticket/{ticket.pk}/change/"
    response = superuser.post(url, form_data(superuser.get(url)) | {"status": "solved", "force": "on"})
    assert response.status_code == 302, error_text(response)
    assert Ticket.objects.get(pk=ticket.pk).status == "solved"
