"""Agents: shapes, roles, bad input, the last-owner invariant, bulk update."""

import pytest

from accounts import services
from accounts.models import ROLE_OWNER, Account, Agent
from helpdesk.errors import Conflict
from tests.factories import AgentFactory, TeamFactory
from tests.spec import ENUMS, FIELDS

UNKNOWN = "6f1c8c1e-0000-4000-8000-000000000000"


def test_an_agent_has_the_spec_fields(owner):
    body = owner.client.get(f"/v1/agents/{owner.agent.pk}").json()
    assert set(FIELDS["Agent"]) <= set(body)
    assert set(body) - set(FIELDS["Agent"]) == {"accountID"}  # the contract adds accountID
    assert set(body["flags"]) == set(FIELDS["Agent.flags"])
    assert set(body["settings"]) == set(FIELDS["Agent.settings"])
    assert set(body["signature"]) == set(FIELDS["Agent.signature"])
    assert body["roles"] == ["owner"] and body["status"] in ENUMS["Agent.status"]
    assert body["accountID"] == str(owner.account.pk)
    assert body["teamIDs"] == [str(owner.license.default_team_id)]
    assert body["jobTitle"] is None
    assert body["licenseID"] == owner.license.pk


def test_the_owner_creates_an_agent_with_teams(owner):
    team = TeamFactory(license=owner.license)
    response = owner.client.post(
        "/v1/agents",
        {
            "email": "New.Person@Example.com",
            "roles": ["normal"],
            "name": "New Person",
            "teamIDs": [str(team.pk)],
            "autoassignment": True,
            "autoassignmentTeamIDs": [str(team.pk)],
            "jobTitle": "Support",
            "signature": {"text": "Cheers", "richTextObj": [{"type": "paragraph"}]},
            "settings": {"emailNotificationsActive": False},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["email"] == "new.person@example.com"
    assert body["teamIDs"] == [str(team.pk)]
    assert body["autoassignmentTeamIDs"] == [str(team.pk)]
    assert body["signature"]["text"] == "Cheers"
    assert body["settings"] == {"emailNotificationsActive": False, "webpushNotificationsActive": "default"}
    assert body["createdBy"] == str(owner.agent.pk) and body["createdByType"] == "agent"
    # inviting by e-mail created the account
    assert Account.objects.filter(email="new.person@example.com").exists()
    assert str(team.pk) in owner.client.get(f"/v1/teams/{team.pk}").json()["ID"]


def test_an_existing_account_joins_as_a_new_agent(owner, outsider):
    response = owner.client.post(
        "/v1/agents", {"email": outsider.account.email, "roles": ["viewer"]}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["accountID"] is None  # until that person accepts (issue 36: no enumeration)
    assert response.json()["status"] == "invited"
    assert Agent.objects.get(pk=response.json()["ID"]).account_id == outsider.account.pk


def test_no_owner_can_make_someone_elses_account_an_active_member(
    owner, outsider, eager_tasks, django_capture_on_commit_callbacks
):
    from django.core import mail as django_mail

    # when the owner adds another license's owner as an active owner of their license
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(
            "/v1/agents",
            {"email": outsider.account.email.upper(), "roles": ["owner"], "status": "active"},
            format="json",
        )
    # then the agent waits for that person to accept, who got the invitation
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "invited"
    assert [sent.to for sent in django_mail.outbox] == [[outsider.account.email]]
    # and that person is no member until then
    header = {"HTTP_X_LICENSE_ID": str(owner.license.pk)}
    assert outsider.client.get("/v1/teams", **header).json()["code"] == "license_not_member"
    # nor can a PATCH of the inviting license activate the membership
    agent_id = response.json()["ID"]
    patched = owner.client.patch(f"/v1/agents/{agent_id}", {"status": "active"}, format="json")
    assert patched.status_code == 400 and "status" in patched.json()["details"]
    assert Agent.objects.get(pk=agent_id).status == "invited"
    assert outsider.client.get("/v1/teams", **header).status_code == 403
    # and neither can the service every writer (API, admin) goes through
    with pytest.raises(Conflict) as refused:
        services.agent_update(agent=Agent.objects.get(pk=agent_id), status="active")
    assert refused.value.code == "invitation_pending"
    assert Agent.objects.get(pk=agent_id).status == "invited"


def test_a_new_address_is_invited_too(owner):
    # an account belongs to whoever proves the address (issue 36): no license makes it an active member
    response = owner.client.post(
        "/v1/agents", {"email": "fresh@example.com", "roles": ["normal"], "status": "active"}, format="json"
    )
    assert response.status_code == 201 and response.json()["status"] == "invited"
    assert response.json()["accountID"] is None


def test_creating_an_agent_does_not_tell_whether_the_address_has_an_account(
    owner, outsider, eager_tasks, django_capture_on_commit_callbacks
):
    from django.core import mail as django_mail

    # when the owner adds an address with an account (another license's owner) and one without
    with django_capture_on_commit_callbacks(execute=True):
        existing = owner.client.post(
            "/v1/agents", {"email": outsider.account.email, "roles": ["normal"]}, format="json"
        )
        fresh = owner.client.post(
            "/v1/agents", {"email": "nobody@example.com", "roles": ["normal"]}, format="json"
        )
    # then both answers are the same but for the agent's own fields: no accountID, the same status
    assert existing.status_code == fresh.status_code == 201
    varying = {"ID", "email", "createdAt", "updatedAt"}
    assert {k: v for k, v in existing.json().items() if k not in varying} == {
        k: v for k, v in fresh.json().items() if k not in varying
    }
    assert existing.json()["accountID"] is None and existing.json()["status"] == "invited"
    # nor does a later read, and both people got the same invitation
    assert owner.client.get(f"/v1/agents/{existing.json()['ID']}").json()["accountID"] is None
    assert sorted(m.to[0] for m in django_mail.outbox) == sorted(
        [outsider.account.email, "nobody@example.com"]
    )


def test_an_agent_email_is_unique_within_the_license(owner, agent):
    response = owner.client.post(
        "/v1/agents", {"email": agent.agent.email.upper(), "roles": ["normal"]}, format="json"
    )
    assert response.status_code == 400
    assert "email" in response.json()["details"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"roles": ["normal"]}, "email"),
        ({"email": "a@example.com"}, "roles"),
        ({"email": "not-an-email", "roles": ["normal"]}, "email"),
        ({"email": 5, "roles": ["normal"]}, "email"),
        ({"email": "a@example.com", "roles": ["admin"]}, "roles"),
        ({"email": "a@example.com", "roles": []}, "roles"),
        ({"email": "a@example.com", "roles": "owner"}, "roles"),
        ({"email": "a@example.com", "roles": ["normal", "normal"]}, "roles"),
        ({"email": "a@example.com", "roles": ["normal"], "status": "gone"}, "status"),
        ({"email": "a@example.com", "roles": ["normal"], "teamIDs": [UNKNOWN]}, "teamIDs"),
        ({"email": "a@example.com", "roles": ["normal"], "teamIDs": ["nope"]}, "teamIDs"),
        ({"email": "a@example.com", "roles": ["normal"], "teamIDs": "x"}, "teamIDs"),
        (
            {"email": "a@example.com", "roles": ["normal"], "autoassignmentTeamIDs": [UNKNOWN]},
            "autoassignmentTeamIDs",
        ),
        ({"email": "a@example.com", "roles": ["normal"], "autoassignment": "true"}, "autoassignment"),
        ({"email": "a@example.com", "roles": ["normal"], "name": 1}, "name"),
        ({"email": "a@example.com", "roles": ["normal"], "flags": {"visitedWelcomeTutorial": 1}}, "flags"),
        ({"email": "a@example.com", "roles": ["normal"], "settings": {"push": True}}, "settings"),
        ({"email": "a@example.com", "roles": ["normal"], "signature": {"text": 3}}, "signature"),
        ({"email": "a@example.com", "roles": ["normal"], "transactionID": "x"}, "transactionID"),
        ({"email": "a@example.com", "roles": ["normal"], "password": "x"}, "password"),
    ],
)
def test_bad_agent_input_is_400_naming_the_field(owner, body, field):
    response = owner.client.post("/v1/agents", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["details"], response.json()
    assert not Agent.objects.filter(email="a@example.com").exists()


def test_another_licenses_team_is_refused(owner, other_license):
    response = owner.client.post(
        "/v1/agents",
        {"email": "a@example.com", "roles": ["normal"], "teamIDs": [str(other_license.default_team_id)]},
        format="json",
    )
    assert response.status_code == 400
    assert "teamIDs" in response.json()["details"]


# --- roles ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["owner", "normal", "viewer"])
def test_every_role_reads_agents(personas, role):
    client = personas[role].client
    assert client.get("/v1/agents").status_code == 200
    assert client.get(f"/v1/agents/{personas['owner'].agent.pk}").status_code == 200


@pytest.mark.parametrize(("role", "expected"), [("owner", 201), ("normal", 403), ("viewer", 403)])
def test_only_owners_create_agents(personas, role, expected):
    response = personas[role].client.post(
        "/v1/agents", {"email": "x@example.com", "roles": ["normal"]}, format="json"
    )
    assert response.status_code == expected


@pytest.mark.parametrize(("role", "expected"), [("owner", 204), ("normal", 403), ("viewer", 403)])
def test_only_owners_delete_agents(personas, role, expected, license):
    target = AgentFactory(license=license)
    assert personas[role].client.delete(f"/v1/agents/{target.pk}").status_code == expected
    assert Agent.objects.filter(pk=target.pk).exists() == (expected != 204)


def test_a_normal_agent_edits_its_own_profile(agent):
    response = agent.client.patch(
        f"/v1/agents/{agent.agent.pk}",
        {"name": "Me", "jobTitle": "Lead", "flags": {"visitedWelcomeTutorial": True}},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["name"] == "Me" and response.json()["flags"]["visitedWelcomeTutorial"] is True


@pytest.mark.parametrize("field", [{"roles": ["owner"]}, {"teamIDs": []}, {"autoassignment": True}])
def test_a_normal_agent_cannot_change_its_roles_or_teams(agent, field):
    response = agent.client.patch(f"/v1/agents/{agent.agent.pk}", field, format="json")
    assert response.status_code == 403
    agent.agent.refresh_from_db()
    assert agent.agent.roles == ["normal"]


def test_a_normal_agent_cannot_edit_someone_else(agent, owner):
    assert agent.client.patch(f"/v1/agents/{owner.agent.pk}", {"name": "x"}, format="json").status_code == 403


def test_a_viewer_never_writes_even_its_own_profile(viewer):
    assert (
        viewer.client.patch(f"/v1/agents/{viewer.agent.pk}", {"name": "x"}, format="json").status_code == 403
    )


# --- the last owner ------------------------------------------------------------------------------------


def test_the_last_active_owner_cannot_be_demoted(owner):
    response = owner.client.patch(f"/v1/agents/{owner.agent.pk}", {"roles": ["normal"]}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "last_owner"
    owner.agent.refresh_from_db()
    assert owner.agent.roles == [ROLE_OWNER]


def test_the_last_active_owner_cannot_be_deleted(owner):
    response = owner.client.delete(f"/v1/agents/{owner.agent.pk}")
    assert response.status_code == 409
    assert Agent.objects.filter(pk=owner.agent.pk).exists()


def test_an_owner_can_step_down_when_another_owner_exists(owner, license):
    AgentFactory(license=license, roles=[ROLE_OWNER])
    response = owner.client.patch(f"/v1/agents/{owner.agent.pk}", {"roles": ["normal"]}, format="json")
    assert response.status_code == 200
    assert response.json()["roles"] == ["normal"]


def test_an_invited_owner_does_not_count_as_an_active_owner(owner, license):
    AgentFactory(license=license, roles=[ROLE_OWNER], status="invited")
    assert owner.client.delete(f"/v1/agents/{owner.agent.pk}").status_code == 409


# --- bulk update -----------------------------------------------------------------------------------------


def test_bulk_update_changes_teams_of_several_agents(owner, license):
    agents = [AgentFactory(license=license) for _ in range(3)]
    team = TeamFactory(license=license)
    response = owner.client.patch(
        "/v1/agents",
        {
            "ids": [str(a.pk) for a in agents],
            "fields": {"teamIDs": [str(team.pk)], "flags": {"visitedWelcomeTutorial": True}},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["doc"]["ID"] for item in body] == [str(a.pk) for a in agents]
    assert all(item["doc"]["teamIDs"] == [str(team.pk)] for item in body)
    assert all(item["doc"]["flags"]["visitedWelcomeTutorial"] for item in body)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"fields": {}}, "ids"),
        ({"ids": [], "fields": {}}, "ids"),
        ({"ids": [UNKNOWN], "fields": {}}, "ids"),
        ({"ids": ["OWNER"], "fields": {"roles": ["viewer"]}}, "fields"),
        ({"ids": ["OWNER"]}, "fields"),
        ({"ids": ["OWNER"], "fields": {"teamIDs": [UNKNOWN]}}, "fields"),
    ],
)
def test_bad_bulk_updates_are_400(owner, body, field):
    if body.get("ids") == ["OWNER"]:
        body = {**body, "ids": [str(owner.agent.pk)]}
    response = owner.client.patch("/v1/agents", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["details"]


def test_bulk_update_cannot_reach_another_licenses_agent(owner, outsider):
    response = owner.client.patch(
        "/v1/agents",
        {"ids": [str(outsider.agent.pk)], "fields": {"flags": {"visitedWelcomeTutorial": True}}},
        format="json",
    )
    assert response.status_code == 400
    outsider.agent.refresh_from_db()
    assert outsider.agent.flags["visitedWelcomeTutorial"] is False


def test_agent_list_runs_a_constant_number_of_queries(owner, license, django_assert_num_queries):
    for _ in range(10):
        AgentFactory(license=license).teams.add(license.default_team)
    owner.client.get("/v1/agents")  # the token's first use records last_used_at (an UPDATE, once a minute)
    # the caller (token and membership), the agents, one prefetch each for teams, autoassignment, signature files
    with django_assert_num_queries(5):
        response = owner.client.get("/v1/agents")
    assert len(response.json()) == 11


@pytest.mark.parametrize(("role", "expected"), [("owner", 200), ("normal", 403), ("viewer", 403)])
def test_only_owners_bulk_update_agents(personas, role, expected):
    body = {"ids": [str(personas["viewer"].agent.pk)], "fields": {"flags": {"visitedWelcomeTutorial": True}}}
    assert personas[role].client.patch("/v1/agents", body, format="json").status_code == expected


def test_the_audit_log_does_not_name_the_account_of_an_added_address(owner, outsider):
    from audit.models import AuditEntry

    # the admin's audit pages show an entry's changes to the license's staff: no accountID in them
    created = owner.client.post(
        "/v1/agents", {"email": outsider.account.email, "roles": ["normal"]}, format="json"
    )
    entry = AuditEntry.objects.get(target="agents", action="create", object_id=created.json()["ID"])
    assert entry.changes["email"]["after"] == outsider.account.email
    assert "accountID" not in entry.changes and str(outsider.account.pk) not in str(entry.changes)
