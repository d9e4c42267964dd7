"""Seats: no more active agents than paid seats, and no fewer seats than active agents."""

from types import SimpleNamespace

import pytest
from django.test import override_settings

from accounts import services as accounts_services
from accounts.models import STATUS_INVITED, Agent
from billing.models import Charge
from helpdesk.errors import Conflict
from tests.factories import AgentFactory, SubscriptionFactory


def _add_agent(owner, n, **extra):
    """An invited agent (every new agent is, issue 36) who then accepts: 201, or the acceptance's 409."""
    response = owner.client.post(
        "/v1/agents", {"email": f"agent{n}@example.com", "roles": ["normal"]} | extra, format="json"
    )
    assert response.status_code == 201, response.content
    if extra.get("status") == "invited":
        return response
    try:
        accounts_services.agent_activate(agent=Agent.objects.get(pk=response.json()["ID"]))
    except Conflict as refused:
        body = {"code": refused.code, "error": refused.message, "details": refused.details}
        return SimpleNamespace(status_code=409, json=lambda: body)
    return response


def test_agents_beyond_the_paid_seats_are_refused(owner):
    # given 3 seats and the owner using one
    SubscriptionFactory(license=owner.license, quantity=3)
    # when
    responses = [_add_agent(owner, n) for n in range(3)]
    # then
    assert [r.status_code for r in responses] == [201, 201, 409]
    body = responses[2].json()
    assert body["code"] == "seat_limit_reached"
    assert "3 seats" in body["error"] and "quantity" in body["error"]
    assert body["details"] == {"seats": 3, "activeAgents": 3}
    assert Agent.objects.filter(license=owner.license, status="active").count() == 3


def test_invited_agents_take_no_seat_until_they_become_active(owner):
    # given a full license
    SubscriptionFactory(license=owner.license, quantity=1)
    # when
    invited = _add_agent(owner, 1, status="invited")
    # then
    assert invited.status_code == 201
    agent = Agent.objects.get(email="agent1@example.com")
    with pytest.raises(Conflict) as refused:
        accounts_services.agent_activate(agent=agent)
    assert refused.value.code == "seat_limit_reached"
    agent.refresh_from_db()
    assert agent.status == STATUS_INVITED


def test_an_invited_agent_becomes_active_when_a_seat_is_free(owner):
    # given
    SubscriptionFactory(license=owner.license, quantity=2)
    agent = AgentFactory(license=owner.license, status=STATUS_INVITED)
    # when
    accounts_services.agent_activate(agent=agent)
    # then
    agent.refresh_from_db()
    assert agent.status == "active"


def test_quantity_cannot_drop_below_the_active_agents(owner, agent, viewer):
    # given 3 active agents on 5 seats
    subscription = SubscriptionFactory(license=owner.license, quantity=5)
    # when
    response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 2}, format="json")
    # then
    assert response.status_code == 409
    assert response.json()["code"] == "seats_in_use"
    assert response.json()["details"] == {"quantity": 2, "activeAgents": 3}
    subscription.refresh_from_db()
    assert (subscription.quantity, subscription.pending_quantity) == (5, None)


def test_a_subscription_cannot_start_with_fewer_seats_than_active_agents(owner, agent):
    response = owner.client.post("/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 1}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "seats_in_use"
    assert not Charge.objects.exists()


def test_a_scheduled_reduction_already_limits_new_agents(owner):
    # given 5 seats, reduced to 2 from the next period
    subscription = SubscriptionFactory(license=owner.license, quantity=5)
    assert (
        owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 2}, format="json").status_code
        == 200
    )
    # when
    responses = [_add_agent(owner, n) for n in range(2)]
    # then the renewal will not find more agents than seats
    assert [r.status_code for r in responses] == [201, 409]


def test_more_seats_let_more_agents_in(owner):
    # given a full license
    subscription = SubscriptionFactory(license=owner.license, quantity=1)
    assert _add_agent(owner, 1).status_code == 409
    # when
    owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 2}, format="json")
    # then the invited agent's acceptance finds a seat
    accounts_services.agent_activate(agent=Agent.objects.get(email="agent1@example.com"))
    assert Agent.objects.get(email="agent1@example.com").status == "active"


@override_settings(BILLING_TRIAL_SEATS=2)
def test_a_license_that_never_subscribed_has_the_trial_seats(owner):
    responses = [_add_agent(owner, n) for n in range(2)]
    assert [r.status_code for r in responses] == [201, 409]


def test_a_lapsed_license_adds_no_agents(owner):
    SubscriptionFactory(license=owner.license, state="expired")
    response = _add_agent(owner, 1)
    assert response.status_code == 409
    assert response.json()["details"]["seats"] == 0
