"""The Django admin's writes are audited as the administrator; the admin shows entries read-only."""

import pytest
from rest_framework.test import APIClient

from accounts.models import Account, Agent, License, Team
from audit.models import AuditEntry
from helpdesk.context import API
from templates_app.models import Template
from tests.audit_helpers import UA, assert_license_creation, entries_written
from tests.factories import AgentFactory, TeamFactory


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
                "roles": ["normal"],
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
            {"name": "Renamed", "roles": ["normal"], "status": "invited", "job_title": ""},
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
            f"/admin/accounts/license/{license.pk}/change/",
            {
                "default_team": license.default_team_id,
                "default_template": license.default_template_id,
                "company_name": "Adm 2",
                "ticket_thread": "on",
                "powered_by_footer": "on",
                "max_subscriptions_per_socket": 10,
                "max_child_tickets_per_ticket": 25,
            },
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
