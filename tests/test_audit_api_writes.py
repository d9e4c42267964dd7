"""Every API write writes exactly one audit entry per changed object, authored by the token's account."""

from rest_framework.test import APIClient

from accounts import services
from accounts.models import ROLE_NORMAL, Account, License
from audit.chain import verify
from helpdesk.context import API, HELPDESK_SYSTEM
from tests.audit_helpers import UA, assert_api_author, assert_license_creation, entries_written
from tests.factories import AgentFactory, TeamFactory


def test_it_audits_an_agent_created_through_the_api(owner):
    # given
    team = TeamFactory(license=owner.license)
    # when
    with entries_written() as written:
        response = owner.client.post(
            "/v1/agents",
            {"email": "new@example.com", "roles": ["normal"], "teamIDs": [str(team.pk)]},
            format="json",
        )
    # then
    assert response.status_code == 201, response.content
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("create", "agents", response.json()["ID"])
    assert entry.license_id == owner.license.pk
    assert_api_author(entry, owner)
    assert entry.changes["email"] == {"before": None, "after": "new@example.com"}
    assert entry.changes["teamIDs"] == {"before": None, "after": [str(team.pk)]}


def test_a_patch_of_fields_and_memberships_is_one_update_entry(owner, agent):
    # given
    team = TeamFactory(license=owner.license)
    # when
    with entries_written() as written:
        response = owner.client.patch(
            f"/v1/agents/{agent.agent.pk}",
            {
                "name": "Renamed",
                "jobTitle": "Boss",
                "teamIDs": [str(team.pk)],
                "autoassignmentTeamIDs": [str(team.pk)],
            },
            format="json",
        )
    # then
    assert response.status_code == 200, response.content
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("update", "agents", str(agent.agent.pk))
    assert entry.entity_name == "Renamed"
    assert_api_author(entry, owner)
    assert entry.changes == {
        "name": {"before": agent.agent.name, "after": "Renamed"},
        "jobTitle": {"before": None, "after": "Boss"},
        "teamIDs": {"before": [], "after": [str(team.pk)]},
        "autoassignmentTeamIDs": {"before": [], "after": [str(team.pk)]},
    }


def test_a_patch_that_changes_nothing_writes_nothing(owner, agent):
    # when
    with entries_written() as written:
        response = owner.client.patch(
            f"/v1/agents/{agent.agent.pk}", {"name": agent.agent.name}, format="json"
        )
    # then
    assert response.status_code == 200
    assert written == []


def test_a_bulk_update_of_five_agents_is_five_entries(owner):
    # given
    agents = [AgentFactory(license=owner.license, roles=[ROLE_NORMAL]) for _ in range(5)]
    team = TeamFactory(license=owner.license)
    # when
    with entries_written() as written:
        response = owner.client.patch(
            "/v1/agents",
            {
                "ids": [str(a.pk) for a in agents],
                "fields": {"teamIDs": [str(team.pk)], "settings": {"emailNotificationsActive": False}},
            },
            format="json",
        )
    # then
    assert response.status_code == 200, response.content
    assert sorted(e.object_id for e in written) == sorted(str(a.pk) for a in agents)
    for entry in written:
        assert (entry.action, entry.target) == ("update", "agents")
        assert_api_author(entry, owner)
        assert entry.changes["teamIDs"] == {"before": [], "after": [str(team.pk)]}
        assert entry.changes["settings"]["after"]["emailNotificationsActive"] is False


def test_it_audits_an_agent_deleted_through_the_api(owner, agent):
    # given
    team = TeamFactory(license=owner.license)
    agent.agent.teams.add(team)
    # when
    with entries_written() as written:
        response = owner.client.delete(f"/v1/agents/{agent.agent.pk}")
    # then
    assert response.status_code == 204
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("delete", "agents", str(agent.agent.pk))
    assert entry.entity_name == str(agent.agent)
    assert_api_author(entry, owner)
    assert entry.changes["email"] == {"before": agent.agent.email, "after": None}
    assert entry.changes["teamIDs"] == {"before": [str(team.pk)], "after": None}


def test_it_audits_team_creation_update_bulk_update_and_deletion_through_the_api(owner, agent):
    # create, with the reverse m2m folded in
    with entries_written() as written:
        response = owner.client.post(
            "/v1/teams", {"name": "Sales", "autoassignmentAgentIDs": [str(agent.agent.pk)]}, format="json"
        )
    assert response.status_code == 201, response.content
    team_id = response.json()["ID"]
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id, entry.entity_name) == (
        "create",
        "teams",
        team_id,
        "Sales",
    )
    assert entry.changes["autoassignmentAgentIDs"] == {"before": None, "after": [str(agent.agent.pk)]}
    assert_api_author(entry, owner)
    # update
    with entries_written() as written:
        response = owner.client.patch(
            f"/v1/teams/{team_id}", {"name": "Sales EU", "autoassignmentAgentIDs": []}, format="json"
        )
    assert response.status_code == 200, response.content
    assert written.one().changes == {
        "name": {"before": "Sales", "after": "Sales EU"},
        "autoassignmentAgentIDs": {"before": [str(agent.agent.pk)], "after": []},
    }
    # bulk update
    other = TeamFactory(license=owner.license)
    with entries_written() as written:
        response = owner.client.patch(
            "/v1/teams", {"ids": [team_id, str(other.pk)], "fields": {"replyName": "Support"}}, format="json"
        )
    assert response.status_code == 200, response.content
    assert sorted(e.object_id for e in written) == sorted([team_id, str(other.pk)])
    assert all(e.changes == {"replyName": {"before": "", "after": "Support"}} for e in written)
    # delete
    with entries_written() as written:
        response = owner.client.delete(f"/v1/teams/{team_id}")
    assert response.status_code == 204
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id, entry.entity_name) == (
        "delete",
        "teams",
        team_id,
        "Sales EU",
    )
    assert_api_author(entry, owner)


def test_it_audits_a_license_update_through_the_api(owner):
    # given
    team = TeamFactory(license=owner.license)
    # when
    with entries_written() as written:
        response = owner.client.patch(
            f"/v1/licenses/{owner.license.pk}",
            {"defaultTeamID": str(team.pk), "settings": {"companyName": "Acme 2"}},
            format="json",
        )
    # then
    assert response.status_code == 200, response.content
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("update", "licenses", str(owner.license.pk))
    assert_api_author(entry, owner)
    assert entry.changes["defaultTeamID"]["after"] == str(team.pk)
    assert entry.changes["settings"]["before"]["companyName"] == "Acme"
    assert entry.changes["settings"]["after"]["companyName"] == "Acme 2"


def test_a_refused_api_write_writes_nothing(owner):
    # when the last owner tries to demote themselves (409)
    with entries_written() as written:
        response = owner.client.patch(f"/v1/agents/{owner.agent.pk}", {"roles": ["normal"]}, format="json")
    # then
    assert response.status_code == 409
    assert written == []


def test_template_writes_through_the_api_are_audited_as_email_templates(owner):
    # create
    content = {"text": "Hi", "html": "<p>Hi</p>", "appearance": {}}
    with entries_written() as written:
        response = owner.client.post("/v1/templates", {"name": "Welcome", "content": content}, format="json")
    assert response.status_code == 201, response.content
    template_id = response.json()["ID"]
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id, entry.entity_name) == (
        "create", "emailTemplates", template_id, "Welcome"
    )  # fmt: skip
    assert entry.changes["content"]["after"]["text"] == "Hi"
    assert_api_author(entry, owner)
    # update
    with entries_written() as written:
        response = owner.client.patch(
            f"/v1/templates/{template_id}",
            {"name": "Welcome!", "content": {**content, "text": "Hello"}},
            format="json",
        )
    assert response.status_code == 200, response.content
    entry = written.one()
    assert entry.action == "update"
    assert entry.changes["name"] == {"before": "Welcome", "after": "Welcome!"}
    assert (entry.changes["content"]["before"]["text"], entry.changes["content"]["after"]["text"]) == (
        "Hi",
        "Hello",
    )
    assert_api_author(entry, owner)
    # delete
    with entries_written() as written:
        response = owner.client.delete(f"/v1/templates/{template_id}")
    assert response.status_code == 204
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("delete", "emailTemplates", template_id)
    assert_api_author(entry, owner)


def test_it_audits_a_license_created_through_the_api(db):
    # given an account without a license
    from tests.conftest import api_client

    account = Account.objects.create_user(email="first@example.com")
    _, token = services.token_issue(account=account)
    client = api_client(account.pk, token)
    # when
    with entries_written() as written:
        response = client.post("/v1/licenses", {"planCode": "hd-team1m"}, format="json")
    # then
    assert response.status_code == 201, response.content
    license = License.objects.get(pk=response.json()["ID"])
    assert_license_creation(written, license, API)
    owner_agent = license.agents.get()
    assert all(e.author_id == owner_agent.pk and e.author_user_agent == UA for e in written)
    assert all(e.author_account_id == account.pk for e in written)


def test_accepting_an_invitation_is_one_agent_update_with_the_invitees_ip_and_user_agent(owner):
    # given an invited agent
    from templates_app.invitations import invitation_token
    from templates_app.models import Invitation

    response = owner.client.post(
        "/v1/agents", {"email": "ivy@example.com", "roles": ["normal"], "status": "invited"}, format="json"
    )
    assert response.status_code == 201, response.content
    invitation = Invitation.objects.get(agent_id=response.json()["ID"])
    invitee = APIClient(HTTP_USER_AGENT="invitee-browser/1.0", REMOTE_ADDR="10.9.8.7")
    # when the invitee (not signed in) accepts
    with entries_written() as written:
        response = invitee.post(
            "/v1/invitations/accept",
            {"token": invitation_token(invitation), "password": "correct horse battery"},
            format="json",
        )
    # then: the status change, authored by the system on the invitee's behalf (no password, no token in it)
    assert response.status_code == 200, response.content
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("update", "agents", str(invitation.agent_id))
    assert entry.changes == {"status": {"before": "invited", "after": "active"}}
    assert (entry.author_type, entry.author_ip, entry.author_user_agent) == (
        HELPDESK_SYSTEM, "10.9.8.7", "invitee-browser/1.0"
    )  # fmt: skip


def test_a_charged_subscription_create_is_one_entry_with_the_trial_it_replaces(owner):
    """The charge intent commits before the gateway call (exactly-once, by design), and the trial expires when
    the charge succeeds: still one logical change, one entry."""
    from billing.services import subscription_start_trial

    # given a running trial
    trial = subscription_start_trial(license=owner.license, plan_code="hd-team1m")
    # when
    with entries_written() as written:
        response = owner.client.post(
            "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
        )
    # then
    assert response.status_code == 201, response.content
    subscription_id = response.json()["subscriptionID"]
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("create", "licenses", subscription_id)
    assert entry.changes["state"] == {"before": None, "after": "active"}
    assert entry.entity_name == "hd-team1m × 2 (active)"
    replaced = entry.changes["replacedTrial"]
    assert (replaced["before"]["ID"], replaced["before"]["state"]) == (str(trial.pk), "active")
    assert (replaced["after"]["ID"], replaced["after"]["state"]) == (str(trial.pk), "expired")
    assert_api_author(entry, owner)
    assert not {"chargeInFlightID", "chargeInFlight"} & set(entry.changes)
    assert verify(owner.license.pk).ok


def test_a_declined_subscription_create_is_one_entry_and_keeps_the_trial(owner, settings):
    from billing.services import subscription_start_trial

    settings.BILLING_SANDBOX_DECLINE = True
    subscription_start_trial(license=owner.license, plan_code="hd-team1m")
    with entries_written() as written:
        response = owner.client.post(
            "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
        )
    assert response.status_code == 402, response.content
    entry = written.one()
    assert entry.action == "create" and entry.changes["state"] == {"before": None, "after": "expired"}
    assert "replacedTrial" not in entry.changes


def test_subscription_update_cancel_and_reactivate_are_one_entry_each(owner):
    # given
    subscription_id = owner.client.post(
        "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
    ).json()["subscriptionID"]
    path = f"/v1/subscriptions/{subscription_id}"
    steps = [
        (
            lambda: owner.client.patch(path, {"quantity": 4}, format="json"),
            {"quantity": {"before": 2, "after": 4}},
        ),
        (lambda: owner.client.post(f"{path}/cancel"), None),
        (lambda: owner.client.post(f"{path}/reactivate"), None),
    ]
    for send, changes in steps:
        # when
        with entries_written() as written:
            response = send()
        # then
        assert response.status_code == 200, response.content
        entry = written.one()
        assert (entry.action, entry.target, entry.object_id) == ("update", "licenses", subscription_id)
        assert_api_author(entry, owner)
        if changes is not None:
            assert entry.changes == changes
