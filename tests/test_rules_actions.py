"""The rules' `autoassign` and `notifyAgents` actions (also a macro's): validated at save (a 400 naming the action's
value), done after the rule's other changes in the same write, through the autoassignment and the agents'
e-mail notifications."""

from __future__ import annotations

import pytest

from accounts.models import AutoassignmentMembership
from templates_app.models import AgentNotification, OutboundMessage
from tests.factories import AgentFactory, TeamFactory, TicketFactory
from tickets.models import TicketEvent
from tickets.rules import services
from tickets.rules.models import Rule

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_tasks")]

STATUS_CHANGED = {"type": "event", "op": "is", "value": "statusChanged"}


def _rule(license, actions, triggers=(STATUS_CHANGED,)):
    return services.rule_create(license=license, name="r", triggers=list(triggers), actions=actions)


def _mails(agent):
    return list(OutboundMessage.objects.filter(kind="notification", to=agent.email))


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"type": "autoassign", "value": 1}, "Must be null."),
        (
            {"type": "notifyAgents", "value": "everyone"},
            "Expected an array of agent IDs, or one of assignee, team.",
        ),
        ({"type": "notifyAgents", "value": []}, "Expected an array of 1 to 100 agent IDs."),
        ({"type": "notifyAgents", "value": ["nope"]}, "Expected an array of agent IDs (UUID strings)."),
    ],
)
def test_a_bad_value_is_a_400_naming_the_action(owner, action, message):
    response = owner.client.post(
        "/v1/rules", {"name": "x", "triggers": [STATUS_CHANGED], "actions": [action]}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["details"] == {"actions": {"0": {"value": [message]}}}
    assert not Rule.objects.exists()


def test_another_licenses_agent_is_a_400(owner, outsider):
    foreign = str(outsider.agent.pk)
    response = owner.client.post(
        "/v1/rules",
        {
            "name": "x",
            "triggers": [STATUS_CHANGED],
            "actions": [{"type": "notifyAgents", "value": [foreign]}],
        },
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["details"] == {
        "actions": {"0": {"value": [f"'{foreign}' does not exist in this license."]}}
    }


def test_autoassign_gives_the_ticket_to_an_eligible_agent_of_its_team(owner, license):
    # given a team ticket nobody could take when it came in
    team = TeamFactory(license=license)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team})
    assert ticket.assignment_agent_id is None
    alice = AgentFactory(license=license, autoassignment=True)
    AutoassignmentMembership.objects.create(agent=alice, team=team)
    _rule(license, [{"type": "autoassign", "value": None}])
    # when a write triggers the rule
    response = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json")
    # then the response shows the ticket assigned by the system, the rule recorded
    body = response.json()
    assert body["assignment"]["agent"]["ID"] == str(alice.pk)
    [event] = TicketEvent.objects.filter(ticket=ticket, type="assignment")
    assert event.author_type == "system"
    assert [e["type"] for e in body["events"]][-1] == "rule"


def test_autoassign_hands_a_ticket_on_after_assign_agent_null(owner, license):
    team = TeamFactory(license=license)
    bob, alice = AgentFactory(license=license), AgentFactory(license=license, autoassignment=True)
    bob.teams.add(team)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": bob})
    AutoassignmentMembership.objects.create(agent=alice, team=team)
    _rule(license, [{"type": "assignAgent", "value": None}, {"type": "autoassign", "value": None}])
    body = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json").json()
    assert body["assignment"]["agent"]["ID"] == str(alice.pk)


def test_autoassign_without_an_eligible_agent_leaves_the_ticket_as_it_is(owner, license):
    team = TeamFactory(license=license)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team})
    rule = _rule(license, [{"type": "autoassign", "value": None}])
    body = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json").json()
    assert body["assignment"]["agent"] is None
    assert Rule.objects.get(pk=rule.pk).use_counter == 1


def test_notify_agents_by_id_sends_them_an_email(owner, license, django_capture_on_commit_callbacks):
    alice = AgentFactory(license=license)
    muted = AgentFactory(license=license, settings={"emailNotificationsActive": False})
    _rule(license, [{"type": "notifyAgents", "value": [str(alice.pk), str(muted.pk)]}])
    ticket = TicketFactory(license=license, subject="Refund")
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json")
    assert response.status_code == 200
    [mail] = _mails(alice)
    assert mail.subject == f"[#{ticket.short_id}] For your attention: Refund"
    assert "a rule asks for your attention" in mail.text
    assert _mails(muted) == []


def test_notify_the_assignee_and_the_team(owner, license, django_capture_on_commit_callbacks):
    team = TeamFactory(license=license)
    alice, bob = AgentFactory(license=license), AgentFactory(license=license)
    alice.teams.add(team)
    bob.teams.add(team)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team, "agent": bob})
    AgentNotification.objects.all().delete()  # the assignment's own
    _rule(license, [{"type": "notifyAgents", "value": "assignee"}])
    with django_capture_on_commit_callbacks(execute=True):
        owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json")
    assert set(AgentNotification.objects.values_list("agent_id", "kind")) == {(bob.pk, "rule")}
    Rule.objects.all().delete()
    _rule(license, [{"type": "notifyAgents", "value": "team"}])
    with django_capture_on_commit_callbacks(execute=True):
        owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "open"}, format="json")
    assert set(AgentNotification.objects.filter(kind="rule").values_list("agent_id", flat=True)) == {
        alice.pk,
        bob.pk,
    }


def test_testing_a_rule_names_its_follow_ups(owner, license):
    rule = _rule(license, [{"type": "autoassign", "value": None}, {"type": "notifyAgents", "value": "team"}])
    ticket = TicketFactory(license=license)
    body = owner.client.post(f"/v1/rules/{rule.pk}/test", {"ticketID": str(ticket.pk)}, format="json").json()
    assert body["changes"] == {"autoassign": None, "notifyAgents": "team"}


def test_a_macro_autoassigns_too(owner, license):
    from tickets.macros.services import macro_create

    team = TeamFactory(license=license)
    ticket = TicketFactory(license=license, teams=[team], assignment={"team": team})
    alice = AgentFactory(license=license, autoassignment=True)
    AutoassignmentMembership.objects.create(agent=alice, team=team)
    macro = macro_create(
        license=license, name="m", visibility="shared", actions=[{"type": "autoassign", "value": None}]
    )
    body = owner.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}").json()
    assert body["assignment"]["agent"]["ID"] == str(alice.pk)
