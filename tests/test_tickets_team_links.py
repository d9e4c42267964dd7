"""Ticket–team links (TicketTeam) carry their ticket's license, silo and status, and a team inbox's total is
counted from them: the copies stay equal to the ticket through every write, and the totals equal the tickets."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import TeamFactory, TicketFactory
from tickets import services
from tickets.models import Ticket, TicketTeam


def links_of(ticket):
    return sorted(
        TicketTeam.objects.filter(ticket=ticket).values_list("team_id", "license_id", "silo", "status")
    )


def expected_links(ticket):
    ticket = Ticket.objects.get(pk=ticket.pk)
    return sorted(
        (team_id, ticket.license_id, ticket.silo, ticket.status)
        for team_id in ticket.teams.values_list("pk", flat=True)
    )


def search(persona, **params):
    response = persona.client.get("/v1/tickets", {"pageSize": 100, **params})
    assert response.status_code == 200, response.content
    return int(response["X-Total-Results"]), sorted(doc["subject"] for doc in response.json())


@pytest.fixture
def teams(owner):
    return TeamFactory(license=owner.license, name="A"), TeamFactory(license=owner.license, name="B")


# --- the copies follow the ticket --------------------------------------------------------------------------


def test_links_carry_the_ticket_state_through_every_write(owner, teams):
    a, b = teams
    # a new ticket: its teams, and the default team when it names none
    ticket = TicketFactory(license=owner.license, teams=[a])
    plain = TicketFactory(license=owner.license)
    assert links_of(ticket) == [(a.pk, owner.license.pk, "tickets", "open")]
    assert links_of(plain) == [(owner.license.default_team_id, owner.license.pk, "tickets", "open")]
    # status, silo, a new team, trash, back again
    steps = [
        lambda t: owner.client.patch(f"/v1/tickets/{t.pk}", {"status": "pending"}, format="json"),
        lambda t: owner.client.patch(
            f"/v1/tickets/{t.pk}", {"teamIDs": [str(a.pk), str(b.pk)]}, format="json"
        ),
        lambda t: owner.client.patch(f"/v1/tickets/{t.pk}", {"silo": "spam"}, format="json"),
        lambda t: owner.client.patch(f"/v1/tickets/{t.pk}", {"silo": "tickets"}, format="json"),
        lambda t: owner.client.delete(f"/v1/tickets/{t.pk}"),
        lambda t: owner.client.patch(f"/v1/tickets/{t.pk}", {"silo": "archive"}, format="json"),
        lambda t: owner.client.patch(f"/v1/tickets/{t.pk}", {"silo": "tickets"}, format="json"),
        lambda t: owner.client.patch(
            f"/v1/tickets/{t.pk}", {"status": "solved", "teamIDs": [str(b.pk)]}, format="json"
        ),
    ]
    seen = set()
    for step in steps:
        assert step(ticket).status_code in (200, 204)
        assert links_of(ticket) == expected_links(ticket)
        seen.update((silo, status) for _, _, silo, status in links_of(ticket))
    assert links_of(ticket) == [(b.pk, owner.license.pk, "tickets", "solved")]
    assert {("trash", "pending"), ("spam", "pending"), ("archive", "pending")} <= seen


def test_the_admins_silo_and_status_actions_keep_the_links(owner, teams):
    a, _ = teams
    ticket = TicketFactory(license=owner.license, teams=[a])
    services.ticket_update(ticket=ticket, silo="trash")
    services.ticket_update(ticket=ticket, silo="tickets")
    services.ticket_update(ticket=ticket, status="closed")
    assert links_of(ticket) == [(a.pk, owner.license.pk, "tickets", "closed")]


# --- a team inbox's total ----------------------------------------------------------------------------------


@pytest.fixture
def inboxes(owner, outsider, teams):
    a, b = teams
    license = owner.license
    TicketFactory(license=license, subject="a open", teams=[a])
    TicketFactory(license=license, subject="a+b open", teams=[a, b])
    TicketFactory(license=license, subject="a pending", teams=[a], status="pending")
    TicketFactory(license=license, subject="a spam", teams=[a], silo="spam")
    TicketFactory(license=license, subject="a archived", teams=[a], silo="archive")
    TicketFactory(license=license, subject="b open", teams=[b])
    TicketFactory(license=license, subject="a open high", teams=[a], priority=20)
    TicketFactory(license=outsider.license, subject="outsider open")
    return a, b


@pytest.mark.parametrize(
    "params, subjects",
    [
        ({"teamIDs[]": ["A"]}, ["a open", "a open high", "a+b open"]),
        ({"teamIDs[]": ["A", "B"]}, ["a open", "a open high", "a+b open", "b open"]),  # a+b counted once
        ({"teamIDs[]": ["B"]}, ["a+b open", "b open"]),
        ({"teamIDs[]": ["A"], "status": "pending"}, ["a pending"]),
        ({"teamIDs[]": ["A"], "silo": "spam"}, ["a spam"]),
        ({"teamIDs[]": ["A"], "silo": "archive"}, ["a archived"]),
        ({"teamIDs[]": ["A"], "spam": "true"}, ["a open", "a open high", "a spam", "a+b open"]),
        ({"teamIDs[]": ["A"], "timezone": "Europe/Warsaw", "priorityOp": "gt"}, ["a open", "a open high", "a+b open"]),
        ({"teamIDs[]": ["A"], "priority": "20"}, ["a open high"]),  # another filter: counted from the tickets
        ({"teamIDs[]": ["A", "B"], "query": "  "}, ["a open", "a open high", "a+b open", "b open"]),
    ],
)  # fmt: skip
def test_a_team_inbox_total_counts_its_tickets(owner, inboxes, params, subjects):
    ids = {"A": str(inboxes[0].pk), "B": str(inboxes[1].pk)}
    params = {**params, "teamIDs[]": [ids[name] for name in params["teamIDs[]"]]}
    assert search(owner, **params) == (len(subjects), subjects)


def test_a_team_inbox_is_counted_from_the_links_alone(owner, inboxes):
    a, b = inboxes
    for teams in ([a], [a, b]):
        with CaptureQueriesContext(connection) as captured:
            total, _ = search(owner, **{"teamIDs[]": [str(team.pk) for team in teams]})
        [count] = [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"].upper()]
        assert 'FROM "tickets_ticket_teams"' in count and '"tickets_ticket"' not in count
        assert total == (3 if len(teams) == 1 else 4)


def test_a_team_inbox_total_follows_writes(owner, inboxes):
    a, _ = inboxes
    assert search(owner, **{"teamIDs[]": [str(a.pk)]})[0] == 3
    ticket = Ticket.objects.get(subject="a open")
    owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved"}, format="json")
    assert search(owner, **{"teamIDs[]": [str(a.pk)]}) == (2, ["a open high", "a+b open"])
    owner.client.delete(f"/v1/tickets/{Ticket.objects.get(subject='a+b open').pk}")
    assert search(owner, **{"teamIDs[]": [str(a.pk)]}) == (1, ["a open high"])
    assert search(owner, **{"teamIDs[]": [str(a.pk)], "silo": "trash"}) == (1, ["a+b open"])


def test_another_licenses_team_is_still_a_400_and_counts_nothing(owner, outsider, inboxes):
    response = owner.client.get("/v1/tickets", {"teamIDs[]": [str(outsider.license.default_team_id)]})
    assert response.status_code == 400
    assert "teamIDs[]" in response.json()["details"]
    # and the outsider's inbox does not see the owner's tickets
    total, subjects = search(outsider, **{"teamIDs[]": [str(outsider.license.default_team_id)]})
    assert (total, subjects) == (1, ["outsider open"])


def test_a_deleted_teams_inbox_is_no_longer_counted(owner, inboxes):
    a, _ = inboxes
    assert search(owner, **{"teamIDs[]": [str(a.pk)]})[0] == 3  # cached now
    assert owner.client.delete(f"/v1/teams/{a.pk}").status_code == 204
    response = owner.client.get("/v1/tickets", {"teamIDs[]": [str(a.pk)]})
    assert response.status_code == 400 and "teamIDs[]" in response.json()["details"]
