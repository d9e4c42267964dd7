"""Every write path writes exactly one audit entry per changed object, with the right author and diff."""

import pytest
from django.core.management import call_command
from django.db import transaction
from rest_framework.test import APIClient

from accounts import services
from accounts.models import ROLE_NORMAL, Account, Agent, License, Team
from audit.context import as_payment_provider
from audit.models import AuditEntry
from helpdesk.celery import app as celery_app
from helpdesk.context import API, HELPDESK_SYSTEM, PAYMENT_PROVIDER, SCHEDULED_TASK
from templates_app.models import Template
from tests.audit_helpers import entries_written
from tests.factories import AgentFactory, TeamFactory

UA = "helpdesk-tests/1.0"


def assert_api_author(entry, persona):
    assert entry.author_type == API
    assert entry.author_id == persona.account.pk
    assert entry.author_email == persona.account.email
    assert entry.author_ip == "127.0.0.1"
    assert entry.author_user_agent == UA


# --- the API ----------------------------------------------------------------------------------------------


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


# --- services, rollback, no-op ----------------------------------------------------------------------------


def test_a_rolled_back_change_leaves_no_entry(license):
    # given
    team = TeamFactory(license=license, name="Before")
    # when
    with entries_written() as written, pytest.raises(RuntimeError), transaction.atomic():
        services.team_update(team=team, name="Renamed")
        raise RuntimeError("boom")
    # then
    assert written == []
    assert Team.objects.get(pk=team.pk).name == "Before"


def test_a_rolled_back_savepoint_leaves_only_the_outer_change(license):
    # given
    first, second = TeamFactory(license=license), TeamFactory(license=license)
    # when
    with entries_written() as written, transaction.atomic():
        services.team_update(team=first, name="Kept")
        try:
            with transaction.atomic():
                services.team_update(team=second, name="Dropped")
                raise RuntimeError("boom")
        except RuntimeError:
            pass
    # then
    assert [(e.object_id, e.changes["name"]["after"]) for e in written] == [(str(first.pk), "Kept")]


def test_a_save_that_changes_nothing_writes_nothing(license):
    # given
    team = TeamFactory(license=license)
    # when the stamps change but nothing else
    with entries_written() as written:
        services.team_update(team=team, name=team.name)
        Team.objects.get(pk=team.pk).save()
    # then
    assert written == []


def test_a_change_without_context_is_authored_by_the_helpdesk_system(license):
    # when
    with entries_written() as written:
        services.team_create(license=license, name="Nightly")
    # then
    entry = written.one()
    assert (entry.author_type, entry.author_id, entry.author_ip) == (HELPDESK_SYSTEM, None, "")


def test_payment_events_are_authored_by_the_payment_provider(license):
    # when
    with entries_written() as written, as_payment_provider():
        services.license_update(license=license, data={"settings": {"companyName": "Paid Inc."}})
    # then
    assert written.one().author_type == PAYMENT_PROVIDER


@celery_app.task(name="tests.rename_team")
def rename_team(team_id, name):
    services.team_update(team=Team.objects.get(pk=team_id), name=name)


def test_celery_tasks_are_authored_as_scheduled_tasks(license):
    # given
    team = TeamFactory(license=license)
    # when the task runs (in-process, with the worker's prerun/postrun signals)
    with entries_written() as written:
        rename_team.apply(args=[str(team.pk), "By task"])
    # then
    assert written.one().author_type == SCHEDULED_TASK


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


def test_template_service_writes_are_audited(license):
    from templates_app import services as template_services

    with entries_written() as written:
        template = template_services.template_create(license=license, name="Svc", content={"text": "a"})
        template_services.template_update(template=template, name="Svc 2")
        template_services.template_delete(template=template)
    assert [(e.action, e.target, e.entity_name) for e in written] == [
        ("create", "emailTemplates", "Svc"),
        ("update", "emailTemplates", "Svc 2"),
        ("delete", "emailTemplates", "Svc 2"),
    ]
    assert written[1].changes == {"name": {"before": "Svc", "after": "Svc 2"}}


# --- operator commands ------------------------------------------------------------------------------------


def test_create_license_writes_one_entry_per_created_object(db):
    # when
    with entries_written() as written:
        call_command(
            "create_license", "--owner-email", "boss@example.com", "--company", "Boss Inc.", "--json"
        )
    # then the license (with its defaults), its default team and template, and its owner: no token hash anywhere
    license = License.objects.get(agents__email="boss@example.com")
    assert_license_creation(written, license, HELPDESK_SYSTEM)
    assert not any("token" in str(e.changes).lower() for e in written)


def assert_license_creation(written, license, author_type):
    # the license, its default team and template, its owner, and its trial subscription (under `licenses`)
    assert sorted((e.action, e.target) for e in written) == [
        ("create", "agents"), ("create", "emailTemplates"), ("create", "licenses"), ("create", "licenses"),
        ("create", "teams"),
    ]  # fmt: skip
    assert {e.license_id for e in written} == {license.pk}
    assert all(e.author_type == author_type for e in written)
    entries = {(e.target, e.object_id == str(license.pk)): e for e in written}
    license_entry, subscription_entry = entries["licenses", True], entries["licenses", False]
    assert license_entry.changes["defaultTeamID"] == {"before": None, "after": str(license.default_team_id)}
    assert license_entry.changes["defaultTemplateID"]["after"] == str(license.default_template_id)
    assert subscription_entry.changes["state"]["after"] == "active"
    assert subscription_entry.changes["isTrial"]["after"] is True
    assert "chargeInFlightID" not in subscription_entry.changes
    assert entries["agents", False].changes["teamIDs"]["after"] == [str(license.default_team_id)]


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
    assert all(e.author_id == account.pk and e.author_user_agent == UA for e in written)


def test_issuing_a_token_is_not_an_audited_license_change(owner):
    # when
    with entries_written() as written:
        call_command("issue_token", "--email", owner.account.email, "--json")
    # then (tokens belong to an account, not to a license; their hashes never reach the log)
    assert written == []


# --- the Django admin -------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(db):
    from django.test import Client

    account = Account.objects.create_superuser(email="admin@example.com", password="x")
    client = Client(HTTP_USER_AGENT="admin-browser/2.0", REMOTE_ADDR="10.1.2.3")
    client.force_login(account)
    client.account = account
    return client


def assert_admin_author(entry, admin_client):
    assert entry.author_type == "administrator"
    assert entry.author_id == admin_client.account.pk
    assert entry.author_email == "admin@example.com"
    assert entry.author_ip == "10.1.2.3"
    assert entry.author_user_agent == "admin-browser/2.0"


def test_admin_agent_add_change_delete_and_bulk_delete_are_audited(admin_client, license):
    # add
    with entries_written() as written:
        response = admin_client.post(
            "/admin/accounts/agent/add/",
            {
                "license": license.pk,
                "email": "viaadmin@example.com",
                "name": "Via Admin",
                "roles": '["normal"]',
                "status": "active",
                "job_title": "",
            },
        )
    assert response.status_code == 302, response.content
    agent = Agent.objects.get(email="viaadmin@example.com")
    entry = written.one()
    assert (entry.action, entry.target, entry.object_id) == ("create", "agents", str(agent.pk))
    assert_admin_author(entry, admin_client)
    # change
    with entries_written() as written:
        response = admin_client.post(
            f"/admin/accounts/agent/{agent.pk}/change/",
            {"name": "Renamed", "roles": '["normal"]', "status": "active", "job_title": ""},
        )
    assert response.status_code == 302, response.content
    entry = written.one()
    assert entry.action == "update"
    assert entry.changes == {"name": {"before": "Via Admin", "after": "Renamed"}}
    assert_admin_author(entry, admin_client)
    # delete
    with entries_written() as written:
        response = admin_client.post(f"/admin/accounts/agent/{agent.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302, response.content
    entry = written.one()
    assert (entry.action, entry.object_id) == ("delete", str(agent.pk))
    assert_admin_author(entry, admin_client)
    # bulk delete
    agents = [AgentFactory(license=license) for _ in range(3)]
    with entries_written() as written:
        response = admin_client.post(
            "/admin/accounts/agent/",
            {"action": "delete_selected", "_selected_action": [str(a.pk) for a in agents], "post": "yes"},
        )
    assert response.status_code == 302, response.content
    assert sorted(e.object_id for e in written) == sorted(str(a.pk) for a in agents)
    assert all(e.action == "delete" and e.author_type == "administrator" for e in written)


def test_admin_team_add_change_delete_and_bulk_delete_are_audited(admin_client, license):
    with entries_written() as written:
        response = admin_client.post("/admin/accounts/team/add/", {"license": license.pk, "name": "Admins"})
    assert response.status_code == 302, response.content
    team = Team.objects.get(name="Admins")
    assert (written.one().action, written.one().target) == ("create", "teams")
    assert_admin_author(written.one(), admin_client)
    with entries_written() as written:
        response = admin_client.post(f"/admin/accounts/team/{team.pk}/change/", {"name": "Admins 2"})
    assert response.status_code == 302, response.content
    assert written.one().changes == {"name": {"before": "Admins", "after": "Admins 2"}}
    with entries_written() as written:
        response = admin_client.post(f"/admin/accounts/team/{team.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302, response.content
    assert written.one().action == "delete"
    teams = [TeamFactory(license=license) for _ in range(2)]
    with entries_written() as written:
        response = admin_client.post(
            "/admin/accounts/team/",
            {"action": "delete_selected", "_selected_action": [str(t.pk) for t in teams], "post": "yes"},
        )
    assert response.status_code == 302, response.content
    assert sorted(e.object_id for e in written) == sorted(str(t.pk) for t in teams)
    assert all(e.author_type == "administrator" for e in written)


def test_admin_license_add_and_change_are_audited(admin_client, db):
    with entries_written() as written:
        response = admin_client.post(
            "/admin/accounts/license/add/", {"owner_email": "adm@example.com", "company_name": "Adm"}
        )
    assert response.status_code == 302, response.content
    license = License.objects.get(agents__email="adm@example.com")
    assert_license_creation(written, license, "administrator")
    assert all(e.author_ip == "10.1.2.3" for e in written)
    with entries_written() as written:
        response = admin_client.post(
            f"/admin/accounts/license/{license.pk}/change/", {"settings": '{"companyName": "Adm 2"}'}
        )
    assert response.status_code == 302, response.content
    entry = written.one()
    assert (entry.action, entry.target) == ("update", "licenses")
    assert entry.changes["settings"]["after"]["companyName"] == "Adm 2"
    assert_admin_author(entry, admin_client)


def test_the_admin_shows_audit_entries_read_only(admin_client, license):
    entry = AuditEntry.objects.filter(license=license).first()
    assert admin_client.get("/admin/audit/auditentry/").status_code == 200
    assert admin_client.get(f"/admin/audit/auditentry/{entry.pk}/change/").status_code == 200
    assert admin_client.get("/admin/audit/auditentry/add/").status_code == 403
    assert (
        admin_client.post(f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    )


def test_a_signed_in_admin_calling_the_api_is_still_the_token_author(owner):
    # the administrator author applies to /admin/ only
    client = APIClient(HTTP_USER_AGENT=UA)
    client.credentials(HTTP_AUTHORIZATION=owner.client._credentials["HTTP_AUTHORIZATION"])
    with entries_written() as written:
        client.patch(f"/v1/agents/{owner.agent.pk}", {"name": "Me"}, format="json")
    assert written.one().author_type == API


def test_a_membership_changed_from_the_unaudited_side_is_in_each_agents_entry(license):
    # given (Team does not audit its members; Agent audits teamIDs)
    team = TeamFactory(license=license)
    first, second = AgentFactory(license=license), AgentFactory(license=license)
    # when
    with entries_written() as written:
        with transaction.atomic():
            team.agents.add(first, second)
        with transaction.atomic():
            team.agents.clear()
    # then one entry per agent and change, none for the team
    added, removed = written[:2], written[2:]
    for entries, before, after in ((added, [], [str(team.pk)]), (removed, [str(team.pk)], [])):
        assert sorted(e.object_id for e in entries) == sorted([str(first.pk), str(second.pk)])
        assert all(e.target == "agents" for e in entries)
        assert all(e.changes == {"teamIDs": {"before": before, "after": after}} for e in entries)


def test_an_autoassignment_change_is_audited_on_the_side_it_was_made_from(license):
    # given (both sides audit the relation)
    team, agent = TeamFactory(license=license), AgentFactory(license=license)
    # when
    with entries_written() as written:
        services.agent_update(agent=agent, autoassignment_teams=[team])
    # then only the agent's entry
    entry = written.one()
    assert (entry.target, entry.changes) == (
        "agents",
        {"autoassignmentTeamIDs": {"before": [], "after": [str(team.pk)]}},
    )


def test_admin_template_add_change_and_bulk_delete_are_audited(admin_client, license):
    content = '{"text": "Hi", "html": "", "appearance": {}}'
    with entries_written() as written:
        response = admin_client.post(
            "/admin/templates_app/template/add/",
            {"license": license.pk, "name": "Adm tpl", "type": "html", "content": content},
        )
    assert response.status_code == 302, response.content
    template = Template.objects.get(name="Adm tpl")
    assert (written.one().action, written.one().target) == ("create", "emailTemplates")
    assert_admin_author(written.one(), admin_client)
    with entries_written() as written:
        response = admin_client.post(
            f"/admin/templates_app/template/{template.pk}/change/", {"name": "Adm tpl 2", "content": content}
        )
    assert response.status_code == 302, response.content
    assert written.one().changes == {"name": {"before": "Adm tpl", "after": "Adm tpl 2"}}
    assert_admin_author(written.one(), admin_client)
    with entries_written() as written:
        response = admin_client.post(
            "/admin/templates_app/template/",
            {"action": "delete_selected", "_selected_action": [str(template.pk)], "post": "yes"},
        )
    assert response.status_code == 302, response.content
    assert (written.one().action, written.one().object_id) == ("delete", str(template.pk))
    assert_admin_author(written.one(), admin_client)


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


# --- billing: subscriptions are recorded under `licenses` ---------------------------------------------------


def test_a_charged_subscription_create_records_the_pending_and_the_paid_step(owner):
    # when (the charge intent commits before the gateway call, by design: two durable steps, two entries)
    with entries_written() as written:
        response = owner.client.post(
            "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
        )
    # then
    assert response.status_code == 201, response.content
    subscription_id = response.json()["subscriptionID"]
    assert [(e.action, e.target, e.object_id) for e in written] == [
        ("create", "licenses", subscription_id),
        ("update", "licenses", subscription_id),
    ]
    created, paid = written
    assert created.changes["state"] == {"before": None, "after": "pending"}
    assert paid.changes["state"] == {"before": "pending", "after": "active"}
    assert paid.entity_name == "hd-team1m × 2 (active)"
    for entry in written:
        assert_api_author(entry, owner)
        assert not {"chargeInFlightID", "chargeInFlight"} & set(entry.changes)


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


def test_renewals_are_authored_by_the_scheduled_task(owner):
    import datetime

    import time_machine

    from billing.tasks import renew_subscriptions

    # given a subscription whose period has ended
    subscription_id = owner.client.post(
        "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
    ).json()["subscriptionID"]
    # when the renewal task runs after the period
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=40)
    with time_machine.travel(later, tick=False), entries_written() as written:
        renew_subscriptions.apply()
    # then every step it took is authored by the scheduled task
    assert written and all(e.object_id == subscription_id for e in written)
    assert all(e.author_type == SCHEDULED_TASK and e.author_ip == "" for e in written)
    assert "currentPeriodStartedAt" in written[-1].changes
