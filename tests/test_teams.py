"""Teams: shapes, roles, the default-team invariant, bulk update, bad input."""

import pytest

from accounts.models import Team
from tests.factories import AgentFactory, TeamFactory
from tests.spec import FIELDS

UNKNOWN = "6f1c8c1e-0000-4000-8000-000000000000"


def test_a_team_has_exactly_the_spec_fields(owner):
    body = owner.client.get(f"/v1/teams/{owner.license.default_team_id}").json()
    assert list(body) == FIELDS["Team"]
    assert set(body["settings"]) == set(FIELDS["Team.settings"])
    assert body["integrations"] == {} and body["templateID"] is None and body["replyAddressID"] is None


def test_creating_a_license_creates_its_default_team(license):
    assert license.default_team is not None
    assert license.default_team.license_id == license.pk
    assert Team.objects.for_license(license).count() == 1


def test_the_owner_creates_a_team_with_autoassignment_agents(owner, license):
    from templates_app.models import ReplyAddress

    member = AgentFactory(license=license)
    address = ReplyAddress.objects.create(license=license, email="billing@acme.example")
    response = owner.client.post(
        "/v1/teams",
        {
            "name": "Billing",
            "settings": {"tagReminder": True},
            "replyName": "Billing at Acme",
            "replyAddressID": str(address.pk),
            "autoassignmentAgentIDs": [str(member.pk)],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "Billing" and body["settings"]["tagReminder"] is True
    assert body["settings"]["notifyTeamAboutAssignedTicket"] is True
    assert body["replyAddressID"] == str(address.pk)
    team = Team.objects.get(pk=body["ID"])
    assert list(team.autoassignment_agents.all()) == [member]
    # the agent side of the same relation
    agent_body = owner.client.get(f"/v1/agents/{member.pk}").json()
    assert agent_body["autoassignmentTeamIDs"] == [body["ID"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": 7}, "name"),
        ({"name": "General"}, "name"),
        ({"name": "x", "settings": {"tagReminder": "no"}}, "settings"),
        ({"name": "x", "settings": {"unknown": True}}, "settings"),
        ({"name": "x", "replyAddressID": "abc"}, "replyAddressID"),
        ({"name": "x", "replyAddressID": UNKNOWN}, "replyAddressID"),
        ({"name": "x", "templateID": UNKNOWN}, "templateID"),
        ({"name": "x", "autoassignmentAgentIDs": [UNKNOWN]}, "autoassignmentAgentIDs"),
        ({"name": "x", "autoassignmentAgentIDs": {"a": 1}}, "autoassignmentAgentIDs"),
        ({"name": "x", "licenseID": 1}, "licenseID"),
    ],
)
def test_bad_team_input_is_400_naming_the_field(owner, body, field):
    response = owner.client.post("/v1/teams", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["details"]
    assert Team.objects.for_license(owner.license).count() == 1


def test_another_licenses_agent_cannot_be_in_autoassignment(owner, outsider):
    response = owner.client.post(
        "/v1/teams", {"name": "x", "autoassignmentAgentIDs": [str(outsider.agent.pk)]}, format="json"
    )
    assert response.status_code == 400


@pytest.mark.parametrize(("role", "expected"), [("owner", 201), ("normal", 403), ("viewer", 403)])
def test_only_owners_create_teams(personas, role, expected):
    assert personas[role].client.post("/v1/teams", {"name": "New"}, format="json").status_code == expected


@pytest.mark.parametrize(("role", "expected"), [("owner", 200), ("normal", 403), ("viewer", 403)])
def test_only_owners_update_teams(personas, role, expected, license):
    team = TeamFactory(license=license)
    response = personas[role].client.patch(f"/v1/teams/{team.pk}", {"name": "Renamed"}, format="json")
    assert response.status_code == expected


@pytest.mark.parametrize("role", ["owner", "normal", "viewer"])
def test_every_role_reads_teams(personas, role):
    assert personas[role].client.get("/v1/teams").status_code == 200


def test_the_default_team_cannot_be_deleted(owner):
    response = owner.client.delete(f"/v1/teams/{owner.license.default_team_id}")
    assert response.status_code == 409
    assert response.json()["code"] == "default_team"
    assert Team.objects.filter(pk=owner.license.default_team_id).exists()


def test_another_team_can_be_deleted_and_memberships_go_with_it(owner, license):
    team = TeamFactory(license=license)
    member = AgentFactory(license=license)
    member.teams.add(team)
    assert owner.client.delete(f"/v1/teams/{team.pk}").status_code == 204
    assert not Team.objects.filter(pk=team.pk).exists()
    assert list(member.teams.all()) == []


def test_switching_the_default_keeps_exactly_one_default(owner, license):
    old_default = license.default_team
    team = TeamFactory(license=license)
    owner.client.patch(f"/v1/licenses/{license.pk}", {"defaultTeamID": str(team.pk)}, format="json")
    # the old default is now an ordinary team and can be deleted; the new one cannot
    assert owner.client.delete(f"/v1/teams/{team.pk}").status_code == 409
    assert owner.client.delete(f"/v1/teams/{old_default.pk}").status_code == 204


def test_bulk_update_returns_docs(owner, license):
    teams = [TeamFactory(license=license) for _ in range(2)]
    response = owner.client.patch(
        "/v1/teams",
        {
            "ids": [str(t.pk) for t in teams],
            "fields": {"replyName": "Acme", "settings": {"tagReminder": True}},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["doc"]["ID"] for item in body] == [str(t.pk) for t in teams]
    assert all(item["doc"]["replyName"] == "Acme" and item["doc"]["settings"]["tagReminder"] for item in body)


@pytest.mark.parametrize(
    "body",
    [
        {"ids": ["TEAM"], "fields": {"name": "x"}},
        {"ids": ["TEAM"]},
        {"fields": {"replyName": "x"}},
        {"ids": [UNKNOWN], "fields": {"replyName": "x"}},
    ],
)
def test_bad_team_bulk_updates_are_400(owner, license, body):
    team = TeamFactory(license=license)
    if body.get("ids") == ["TEAM"]:
        body = {**body, "ids": [str(team.pk)]}
    assert owner.client.patch("/v1/teams", body, format="json").status_code == 400


def test_renaming_to_an_existing_name_is_refused(owner, license):
    team = TeamFactory(license=license, name="Sales")
    response = owner.client.patch(f"/v1/teams/{team.pk}", {"name": "general"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()["details"]


@pytest.mark.parametrize(("role", "expected"), [("owner", 200), ("normal", 403), ("viewer", 403)])
def test_only_owners_bulk_update_teams(personas, role, expected, license):
    body = {"ids": [str(license.default_team_id)], "fields": {"replyName": "x"}}
    assert personas[role].client.patch("/v1/teams", body, format="json").status_code == expected


@pytest.mark.parametrize(("role", "expected"), [("owner", 204), ("normal", 403), ("viewer", 403)])
def test_only_owners_delete_teams(personas, role, expected, license):
    team = TeamFactory(license=license)
    assert personas[role].client.delete(f"/v1/teams/{team.pk}").status_code == expected
