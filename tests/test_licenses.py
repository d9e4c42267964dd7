"""Licenses: list, get, update settings."""

import pytest

from tests.factories import TeamFactory
from tests.spec import ENUMS, FIELDS


def test_the_license_has_exactly_the_spec_fields(owner):
    body = owner.client.get(f"/v1/licenses/{owner.license.pk}").json()
    assert set(FIELDS["License"]) <= set(body)
    assert set(body["flags"]) == set(FIELDS["License.flags"])
    assert set(body["settings"]) == set(FIELDS["License.settings"])
    assert set(body["source"]) == set(FIELDS["License.source"])
    assert isinstance(body["ID"], int)
    assert body["createdByType"] in ENUMS["createdByType"]
    assert body["createdAt"].endswith("Z") and len(body["createdAt"]) == len("2026-04-30T22:02:08.901Z")
    assert isinstance(body["settings"]["maxChildTicketsPerTicket"], int)
    assert isinstance(body["settings"]["poweredByFooter"], bool)
    assert body["detectedLanguages"] == []
    assert body["defaultTeamID"] == str(owner.license.default_team_id)


def test_list_returns_the_callers_licenses_as_a_bare_array(owner, outsider):
    body = owner.client.get("/v1/licenses").json()
    assert isinstance(body, list)
    assert [item["ID"] for item in body] == [owner.license.pk]


@pytest.mark.parametrize("role", ["owner", "normal", "viewer"])
def test_every_role_can_read_the_license(personas, role):
    client = personas[role].client
    assert client.get(f"/v1/licenses/{personas[role].license.pk}").status_code == 200


def test_the_owner_updates_settings_and_the_default_team(owner):
    team = TeamFactory(license=owner.license)
    response = owner.client.patch(
        f"/v1/licenses/{owner.license.pk}",
        {
            "defaultTeamID": str(team.pk),
            "settings": {"companyName": "Acme Two", "maxChildTicketsPerTicket": 5},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["defaultTeamID"] == str(team.pk)
    assert body["settings"]["companyName"] == "Acme Two"
    assert body["settings"]["maxChildTicketsPerTicket"] == 5
    assert body["settings"]["poweredByFooter"] is True  # untouched settings keep their values
    owner.license.refresh_from_db()
    assert owner.license.default_team_id == team.pk
    assert body["updatedBy"] == str(owner.agent.pk)


@pytest.mark.parametrize("role", ["normal", "viewer"])
def test_only_owners_update_the_license(personas, role):
    response = personas[role].client.patch(
        f"/v1/licenses/{personas[role].license.pk}", {"settings": {"companyName": "x"}}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"defaultTeamID": "not-a-uuid"}, "defaultTeamID"),
        ({"defaultTeamID": 12}, "defaultTeamID"),
        ({"defaultTeamID": "6f1c8c1e-0000-4000-8000-000000000000"}, "defaultTeamID"),
        ({"defaultTemplateID": "6f1c8c1e-0000-4000-8000-000000000000"}, "defaultTemplateID"),
        ({"settings": {"companyName": 5}}, "settings"),
        ({"settings": {"poweredByFooter": "yes"}}, "settings"),
        ({"settings": {"maxChildTicketsPerTicket": "5"}}, "settings"),
        ({"settings": {"maxChildTicketsPerTicket": 0}}, "settings"),
        ({"settings": {"colour": "red"}}, "settings"),
        ({"settings": []}, "settings"),
        ({"flags": {}}, "flags"),
        ({"ID": 5}, "ID"),
    ],
)
def test_bad_license_updates_are_400_naming_the_field(owner, body, field):
    response = owner.client.patch(f"/v1/licenses/{owner.license.pk}", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["details"]


def test_another_licenses_team_cannot_become_the_default(owner, other_license):
    response = owner.client.patch(
        f"/v1/licenses/{owner.license.pk}",
        {"defaultTeamID": str(other_license.default_team_id)},
        format="json",
    )
    assert response.status_code == 400
    assert "defaultTeamID" in response.json()["details"]
    owner.license.refresh_from_db()
    assert owner.license.default_team_id != other_license.default_team_id


def test_another_license_is_a_404_even_by_id(owner, other_license):
    assert owner.client.get(f"/v1/licenses/{other_license.pk}").status_code == 404
    assert owner.client.patch(f"/v1/licenses/{other_license.pk}", {}, format="json").status_code == 404


def test_stamps_name_an_agent_or_the_system_never_null_or_empty(owner, db):
    """createdBy/updatedBy follow one rule on every resource: the agent's ID (what /v1/agents lists), or the
    system's fixed ID for what the system made; rows stamped before the rule (null, or "" on a license) read
    as the system."""
    from accounts.models import License, Team
    from helpdesk.context import SYSTEM_ACTOR_ID
    from tests.factories import LicenseFactory

    system = str(SYSTEM_ACTOR_ID)
    # a license made by the system (an operator command, a factory) and its team
    made = LicenseFactory()
    assert (made.created_by, made.updated_by) == (system, system)
    assert made.default_team.created_by == SYSTEM_ACTOR_ID
    # rows stamped before the rule
    License.objects.filter(pk=owner.license.pk).update(created_by="", updated_by="")
    Team.objects.filter(pk=owner.license.default_team_id).update(created_by=None, updated_by=None)
    body = owner.client.get(f"/v1/licenses/{owner.license.pk}").json()
    assert (body["createdBy"], body["updatedBy"]) == (system, system)
    team = owner.client.get(f"/v1/teams/{owner.license.default_team_id}").json()
    assert (team["createdBy"], team["updatedBy"]) == (system, system)
    # an agent's change names the agent
    owner.client.patch(f"/v1/teams/{owner.license.default_team_id}", {"name": "Renamed"}, format="json")
    team = owner.client.get(f"/v1/teams/{owner.license.default_team_id}").json()
    assert team["updatedBy"] == str(owner.agent.pk)
