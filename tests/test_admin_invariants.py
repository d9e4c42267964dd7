"""The admin keeps the API's rules: a refusal by a service is a form error or the "Cannot delete" page,
never a server error, and nothing of a refused change is saved (nor audited)."""

import pytest

from accounts import services
from accounts.models import Agent, Team
from templates_app.models import Template
from tests.admin_helpers import error_text, form_data
from tests.audit_helpers import entries_written
from tests.factories import AgentFactory, LicenseFactory, TeamFactory, TemplateFactory


def _change(client, obj):
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/change/"


def _delete(client, obj):
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/delete/"


def _bulk_delete(client, model, objs):
    return client.post(
        f"/admin/{model._meta.app_label}/{model._meta.model_name}/",
        {"action": "delete_selected", "_selected_action": [str(o.pk) for o in objs], "post": "yes"},
    )


def test_deleting_the_default_team_is_refused(superuser, license):
    # when the admin confirms the deletion of the default team
    team = license.default_team
    page = superuser.get(_delete(superuser, team))
    response = superuser.post(_delete(superuser, team), {"post": "yes"})
    # then the page says why it cannot, and the team stays
    for shown in (page, response):
        assert shown.status_code == 200
        assert b"Cannot delete" in shown.content
        assert b"The default team cannot be deleted" in shown.content
    assert Team.objects.filter(pk=team.pk).exists()


def test_bulk_deleting_teams_with_the_default_deletes_none(superuser, license):
    # given another team
    other = TeamFactory(license=license)
    # when both are bulk-deleted
    with entries_written() as written:
        response = _bulk_delete(superuser, Team, [other, license.default_team])
    # then the refusal is shown and neither is deleted, nothing audited
    assert response.status_code == 200
    assert b"The default team cannot be deleted" in response.content
    assert Team.objects.filter(pk__in=[other.pk, license.default_team_id]).count() == 2
    assert list(written) == []


def test_deleting_another_team_works(superuser, license):
    other = TeamFactory(license=license)
    response = superuser.post(_delete(superuser, other), {"post": "yes"})
    assert response.status_code == 302
    assert not Team.objects.filter(pk=other.pk).exists()


def test_deleting_the_default_template_is_refused(superuser, license):
    template = license.default_template
    response = superuser.post(_delete(superuser, template), {"post": "yes"})
    assert response.status_code == 200
    assert b"The default template cannot be deleted" in response.content
    assert Template.objects.filter(pk=template.pk).exists()
    # another template goes
    other = TemplateFactory(license=license)
    assert superuser.post(_delete(superuser, other), {"post": "yes"}).status_code == 302
    assert not Template.objects.filter(pk=other.pk).exists()


def test_demoting_the_last_owner_is_a_form_error_and_saves_nothing(superuser, owner):
    # given the owner's change form, with a new name and the owner role taken away
    agent = owner.agent
    url = _change(superuser, agent)
    data = form_data(superuser.get(url)) | {"name": "Renamed", "roles": ["normal"]}
    # when it is saved
    with entries_written() as written:
        response = superuser.post(url, data)
    # then the form shows the refusal, and neither the name nor the roles changed, nothing audited
    assert response.status_code == 200
    assert "at least one active owner" in error_text(response)
    agent.refresh_from_db()
    assert (agent.name, agent.roles) == ("Owner", ["owner"])
    assert list(written) == []


def test_deactivating_the_last_owner_is_a_form_error(superuser, owner):
    url = _change(superuser, owner.agent)
    data = form_data(superuser.get(url)) | {"status": "invited"}
    response = superuser.post(url, data)
    assert response.status_code == 200
    assert "at least one active owner" in error_text(response)
    owner.agent.refresh_from_db()
    assert owner.agent.status == "active"


def test_deleting_the_last_owner_is_refused(superuser, owner):
    response = superuser.post(_delete(superuser, owner.agent), {"post": "yes"})
    assert response.status_code == 200
    assert b"at least one active owner" in response.content
    assert Agent.objects.filter(pk=owner.agent.pk).exists()


def test_with_a_second_owner_the_first_can_be_demoted(superuser, owner):
    AgentFactory(license=owner.license, roles=["owner"])
    url = _change(superuser, owner.agent)
    response = superuser.post(url, form_data(superuser.get(url)) | {"roles": ["normal"]})
    assert response.status_code == 302
    owner.agent.refresh_from_db()
    assert owner.agent.roles == ["normal"]


def test_an_agent_added_in_the_admin_is_invited_and_takes_a_seat_only_by_accepting(
    superuser, license, settings
):
    from helpdesk.errors import Conflict

    # given every seat of the (implicit trial) allowance taken
    settings.BILLING_TRIAL_SEATS = 2
    AgentFactory(license=license)
    # when one more agent is added, even as `active`
    response = superuser.post(
        "/admin/accounts/agent/add/",
        {"license": license.pk, "email": "extra@example.com", "roles": ["normal"], "status": "active"},
    )
    # then it is invited (only the person who proves the address makes it active, issue 36), taking no seat
    assert response.status_code == 302
    agent = Agent.objects.get(email="extra@example.com")
    assert agent.status == "invited"
    # and its acceptance finds no seat
    with pytest.raises(Conflict) as refused:
        services.agent_activate(agent=agent)
    assert refused.value.code == "seat_limit_reached"


def test_an_invited_agent_cannot_be_activated_in_the_admin(superuser, license):
    # only the invited person makes the membership active, by accepting the invitation
    invited = AgentFactory(license=license, status="invited")
    url = _change(superuser, invited)
    response = superuser.post(url, form_data(superuser.get(url)) | {"status": "active"})
    assert response.status_code == 200
    assert "accept the invitation" in error_text(response)
    invited.refresh_from_db()
    assert invited.status == "invited"


def test_adding_an_existing_account_in_the_admin_invites_it(superuser, license, other_license):
    stranger = other_license.agents.get()
    response = superuser.post(
        "/admin/accounts/agent/add/",
        {"license": license.pk, "email": stranger.email, "roles": ["owner"], "status": "active"},
    )
    assert response.status_code == 302
    assert Agent.objects.get(license=license, account=stranger.account).status == "invited"


def test_a_duplicate_team_name_is_a_form_error_on_the_name(superuser, license):
    TeamFactory(license=license, name="Sales")
    other = TeamFactory(license=license, name="Support")
    url = _change(superuser, other)
    response = superuser.post(url, form_data(superuser.get(url)) | {"name": "sales"})
    assert response.status_code == 200
    assert "already exists" in " ".join(response.context["adminform"].form.errors["name"])


def test_a_team_of_another_license_is_a_form_error(superuser, license):
    # given a team of another license
    foreign = LicenseFactory().default_team
    # when an agent of `license` is added into it (the add form cannot know the license in advance)
    response = superuser.post(
        "/admin/accounts/agent/add/",
        {"license": license.pk, "email": "x@example.com", "roles": ["normal"], "status": "invited", "teams": [foreign.pk]},
    )  # fmt: skip
    # then the teams field shows the refusal and nothing is created
    assert response.status_code == 200
    assert "does not exist in this license" in " ".join(response.context["adminform"].form.errors["teams"])
    assert not Agent.objects.filter(email="x@example.com").exists()


def test_an_agents_form_offers_only_its_license_teams(superuser, license):
    foreign = LicenseFactory().default_team
    agent = AgentFactory(license=license)
    url = _change(superuser, agent)
    form = superuser.get(url).context["adminform"].form
    assert set(form.fields["teams"].queryset) == set(Team.objects.filter(license=license))
    response = superuser.post(url, form_data(superuser.get(url)) | {"teams": [str(foreign.pk)]})
    assert response.status_code == 200
    assert "teams" in response.context["adminform"].form.errors
    assert not agent.teams.filter(pk=foreign.pk).exists()


@pytest.mark.parametrize("field", ["default_team", "default_template"])
def test_a_license_default_from_another_license_is_a_form_error(superuser, license, field):
    other = LicenseFactory()
    url = _change(superuser, license)
    data = form_data(superuser.get(url)) | {field: str(getattr(other, f"{field}_id"))}
    response = superuser.post(url, data)
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    license.refresh_from_db()
    assert getattr(license, f"{field}_id") != getattr(other, f"{field}_id")


def test_a_constraint_hit_by_a_concurrent_write_is_a_form_error(superuser, license, monkeypatch):
    # given a write that fails on a database constraint (as when another request got there first)
    from django.db import IntegrityError

    from accounts import services

    def conflicting(**kwargs):
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(services, "team_update", conflicting)
    team = TeamFactory(license=license, name="Before")
    url = _change(superuser, team)
    # when the form is saved
    response = superuser.post(url, form_data(superuser.get(url)) | {"name": "After"})
    # then the form says so and nothing changed
    assert response.status_code == 200
    assert "nothing was saved" in error_text(response)
    team.refresh_from_db()
    assert team.name == "Before"
