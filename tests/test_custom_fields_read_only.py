"""Issue #29: a `readOnly` custom field is set only by rules, macros and integrations' OAuth apps; an agent's own
write of it (API token, owner or not) is a 400 naming it."""

from __future__ import annotations

import pytest

from tests.factories import AgentFactory, CustomFieldFactory, TicketFactory
from tests.oauth_helpers import bearer_client, make_grant
from tickets.rules import services as rule_services

pytestmark = pytest.mark.django_db

SCORE = {"type": "setCustomField", "value": {"apiKey": "score", "value": 7}}


@pytest.fixture
def score(license):
    return CustomFieldFactory(license=license, api_key="score", role_level="readOnly", type="number")


def test_an_agents_write_is_a_400_naming_the_field(score, owner, agent):
    ticket = TicketFactory(license=owner.license)
    for persona in (owner, agent):
        response = persona.client.patch(
            f"/v1/tickets/{ticket.pk}", {"customFields": {"score": 3}}, format="json"
        )
        assert response.status_code == 400
        assert list(response.json()["details"]) == ["customFields.score"]
    ticket.refresh_from_db()
    assert ticket.custom_fields == {}


def test_a_rule_sets_it(score, owner):
    rule_services.rule_create(
        license=owner.license,
        name="score",
        triggers=[{"type": "event", "op": "is", "value": "statusChanged"}],
        actions=[SCORE],
    )
    ticket = TicketFactory(license=owner.license)
    body = owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "pending"}, format="json").json()
    assert body["customFields"] == {"score": 7}
    assert "skipped" not in [e for e in body["events"] if e["type"] == "rule"][0]["rule"]


def test_a_macro_sets_it_whoever_applies_it(score, owner, agent):
    from tickets.macros.services import macro_create

    macro = macro_create(license=owner.license, name="m", visibility="shared", actions=[SCORE])
    ticket = TicketFactory(license=owner.license)
    response = agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}")
    assert response.status_code == 200, response.content
    assert response.json()["customFields"] == {"score": 7}


def test_an_oauth_apps_token_sets_it(score, license):
    token = make_grant(license, agent=AgentFactory(license=license, roles=["owner"]))
    ticket = TicketFactory(license=license)
    response = bearer_client(token.plaintext).patch(
        f"/v1/tickets/{ticket.pk}", {"customFields": {"score": 3}}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["customFields"] == {"score": 3}
