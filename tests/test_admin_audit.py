"""Changes made in the admin's forms are audited once each, as the administrator, with the API's field names."""

from accounts.models import Agent
from audit.models import AuditEntry
from tests.admin_helpers import UA, form_data
from tests.audit_helpers import entries_written
from tests.factories import AgentFactory, TeamFactory


def _assert_admin(entry, client):
    assert entry.author_type == "administrator"
    # a support admin who is an agent of the license appears as that agent (the ID /v1/agents lists)
    membership = Agent.objects.filter(license_id=entry.license_id, account=client.account).first()
    assert entry.author_id == (membership.pk if membership else client.account.pk)
    assert entry.author_account_id == client.account.pk
    assert entry.author_user_agent == UA


def test_an_agents_teams_changed_in_the_admin_are_one_entry(superuser, license):
    # given an agent in the default team
    agent = AgentFactory(license=license)
    agent.teams.add(license.default_team)
    team = TeamFactory(license=license)
    url = f"/admin/accounts/agent/{agent.pk}/change/"
    # when its teams and name change in one save
    data = form_data(superuser.get(url)) | {"name": "Renamed", "teams": [str(team.pk)]}
    with entries_written() as written:
        assert superuser.post(url, data).status_code == 302
    # then one update entry holds both
    entry = written.one()
    _assert_admin(entry, superuser)
    assert entry.changes == {
        "name": {"before": agent.name, "after": "Renamed"},
        "teamIDs": {"before": [str(license.default_team_id)], "after": [str(team.pk)]},
    }


def test_license_settings_changed_in_the_admin_are_audited(superuser, license):
    url = f"/admin/accounts/license/{license.pk}/change/"
    data = form_data(superuser.get(url)) | {"max_subscriptions_per_socket": "12"}
    with entries_written() as written:
        assert superuser.post(url, data).status_code == 302
    entry = written.one()
    _assert_admin(entry, superuser)
    assert (entry.target, entry.action) == ("licenses", "update")
    assert entry.changes["settings"]["before"]["maxSubscriptionsPerSocket"] == 10
    assert entry.changes["settings"]["after"]["maxSubscriptionsPerSocket"] == 12


def test_an_unchanged_form_saved_again_writes_no_entry(superuser, license):
    url = f"/admin/accounts/team/{license.default_team_id}/change/"
    with entries_written() as written:
        assert superuser.post(url, form_data(superuser.get(url))).status_code == 302
    assert list(written) == []


def test_an_owner_with_staff_access_is_audited_as_administrator(staff_owner, license):
    with entries_written() as written:
        response = staff_owner.post(
            "/admin/accounts/team/add/",
            {"license": license.pk, "name": "By owner", "notify_team_about_assigned_ticket": "on"},
        )
    assert response.status_code == 302
    entry = written.one()
    _assert_admin(entry, staff_owner)
    assert (entry.action, entry.target, entry.entity_name) == ("create", "teams", "By owner")
    # and the owner sees it in the audit log
    listed = staff_owner.get("/admin/audit/auditentry/", {"author_type__exact": "administrator"})
    assert entry in listed.context["cl"].result_list
    page = staff_owner.get(f"/admin/audit/auditentry/{entry.pk}/change/")
    assert page.status_code == 200 and b"By owner" in page.content
    assert AuditEntry.objects.filter(pk=entry.pk).exists()
