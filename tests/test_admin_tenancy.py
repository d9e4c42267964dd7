"""Tenancy of the admin: an owner with staff access sees, changes and picks only their license's records;
a staff account that owns no license sees nothing license-owned; superusers see everything."""

import pytest

from accounts.models import Account, Agent, License, Team
from audit.models import AuditEntry
from billing.models import Subscription
from templates_app.models import Template
from tests.admin_helpers import form_data, signed_in, staff
from tests.factories import (
    AgentFactory,
    LicenseFactory,
    SubscriptionFactory,
    TagFactory,
    TeamFactory,
    TicketFactory,
)
from tickets.models import Tag, Ticket

LICENSE_OWNED = [Agent, Team, Template, Subscription, AuditEntry, Ticket, Tag]


def _url(model, suffix=""):
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/{suffix}"


@pytest.fixture
def theirs(other_license):
    """Objects of the other license, one of each kind."""
    SubscriptionFactory(license=other_license)
    return {
        License: other_license,
        Agent: other_license.agents.get(),
        Team: TeamFactory(license=other_license, name="Their team"),
        Template: other_license.default_template,
        Subscription: Subscription.objects.get(license=other_license),
        AuditEntry: AuditEntry.objects.filter(license=other_license).first(),
        Ticket: TicketFactory(license=other_license),
        Tag: TagFactory(license=other_license),
    }


@pytest.mark.parametrize("model", [License, *LICENSE_OWNED], ids=lambda m: m.__name__)
def test_an_owner_lists_only_their_license(staff_owner, license, theirs, model):
    # given objects of both licenses
    SubscriptionFactory(license=license)
    TicketFactory(license=license)
    TagFactory(license=license)
    # when the owner lists them
    response = staff_owner.get(_url(model), {"view": "all"} if model is Ticket else {})
    # then only their license's are there
    assert response.status_code == 200
    shown = list(response.context["cl"].result_list)
    assert shown
    path = "pk" if model is License else "license_id"
    assert {getattr(obj, path) for obj in shown} == {license.pk}


@pytest.mark.parametrize("model", [License, *LICENSE_OWNED], ids=lambda m: m.__name__)
def test_an_owner_cannot_open_another_licenses_object(staff_owner, theirs, model):
    # when the owner opens the other license's object
    response = staff_owner.get(_url(model, f"{theirs[model].pk}/change/"))
    # then Django's admin answers as for a missing object: back to the index
    assert response.status_code == 302
    assert response["Location"] == "/admin/"


def test_an_owner_cannot_change_or_delete_another_licenses_objects(staff_owner, theirs):
    team = theirs[Team]
    response = staff_owner.post(_url(Team, f"{team.pk}/change/"), {"name": "Mine now"})
    assert response.status_code == 302
    response = staff_owner.post(_url(Team, f"{team.pk}/delete/"), {"post": "yes"})
    assert response.status_code == 302
    response = staff_owner.post(
        _url(Team), {"action": "delete_selected", "_selected_action": [str(team.pk)], "post": "yes"}
    )
    team.refresh_from_db()
    assert team.name == "Their team"


def test_an_owner_changes_their_own_license_records(staff_owner, license):
    team = TeamFactory(license=license, name="Ours")
    url = _url(Team, f"{team.pk}/change/")
    response = staff_owner.post(url, form_data(staff_owner.get(url)) | {"name": "Ours 2"})
    assert response.status_code == 302
    team.refresh_from_db()
    assert team.name == "Ours 2"


def test_an_owner_cannot_add_licenses_nor_see_identities(staff_owner):
    assert staff_owner.get(_url(License, "add/")).status_code == 403
    assert staff_owner.get("/admin/accounts/account/").status_code == 403
    assert staff_owner.get("/admin/accounts/personalaccesstoken/").status_code == 403


def test_an_owners_forms_offer_only_their_license(staff_owner, license, theirs):
    # the add forms' related choices
    form = staff_owner.get(_url(Agent, "add/")).context["adminform"].form
    assert set(form.fields["license"].queryset) == {license}
    assert set(form.fields["teams"].queryset) == set(Team.objects.filter(license=license))
    form = staff_owner.get(_url(Team, "add/")).context["adminform"].form
    assert set(form.fields["template"].queryset) == set(Template.objects.filter(license=license))
    assert set(form.fields["autoassignment_agents"].queryset) == set(Agent.objects.filter(license=license))


def test_an_owner_cannot_pick_another_licenses_team(staff_owner, license, theirs):
    # when the owner posts the other license's team for one of their agents
    agent = AgentFactory(license=license)
    url = _url(Agent, f"{agent.pk}/change/")
    response = staff_owner.post(url, form_data(staff_owner.get(url)) | {"teams": [str(theirs[Team].pk)]})
    # then it is not a valid choice
    assert response.status_code == 200
    assert "teams" in response.context["adminform"].form.errors
    assert not agent.teams.exists()


def _autocomplete(client, model_name, field_name, term="", **params):
    return client.get(
        "/admin/autocomplete/",
        {"app_label": "accounts", "model_name": model_name, "field_name": field_name, "term": term, **params},
    ).json()["results"]


def test_autocomplete_offers_only_the_owners_license(staff_owner, license, theirs):
    # teams (e.g. the agent form's teams), agents (a team's auto-assignment) and licenses
    teams = _autocomplete(staff_owner, "teammembership", "team")
    assert {r["id"] for r in teams} == {
        str(pk) for pk in Team.objects.filter(license=license).values_list("pk", flat=True)
    }
    agents = _autocomplete(staff_owner, "teammembership", "agent")
    assert {r["id"] for r in agents} == {str(license.agents.get().pk)}
    assert [r["id"] for r in _autocomplete(staff_owner, "agent", "license")] == [str(license.pk)]
    # asking for the other license narrows to nothing, never widens
    assert _autocomplete(staff_owner, "teammembership", "team", license=theirs[License].pk) == []


def test_autocomplete_of_an_objects_form_stays_in_its_license(superuser, license, theirs):
    # a superuser sees every license, but an agent's form asks only for its own license's teams
    agent = AgentFactory(license=license)
    page = superuser.get(_url(Agent, f"{agent.pk}/change/"))
    assert f"/admin/autocomplete/?license={license.pk}".encode() in page.content
    teams = _autocomplete(superuser, "teammembership", "team", license=license.pk)
    assert {r["id"] for r in teams} == {
        str(pk) for pk in Team.objects.filter(license=license).values_list("pk", flat=True)
    }
    assert len(_autocomplete(superuser, "teammembership", "team")) == Team.objects.count()


def test_an_owner_of_two_licenses_sees_both_and_filters_by_them(staff_owner, license, theirs):
    # given the owner also owns a second license
    second = LicenseFactory(company_name="Second")
    AgentFactory(license=second, account=staff_owner.account, roles=["owner"])
    # when they list agents
    response = staff_owner.get(_url(Agent))
    # then they see both of their licenses' agents, and the filters offer their licenses and teams only
    assert {a.license_id for a in response.context["cl"].result_list} == {license.pk, second.pk}
    cl = response.context["cl"]
    choices = [choice["display"] for spec in cl.filter_specs for choice in spec.choices(cl)]
    assert str(license) in choices and str(second) in choices
    assert str(theirs[License]) not in choices
    assert "Their team" not in choices


def test_a_staff_account_that_is_no_agent_sees_nothing(db):
    # given a staff account that is an agent of no license
    client = signed_in(Account.objects.create_user(email="ops@example.com", password="x", is_staff=True))
    # then the index lists no license-owned model, and their pages are refused
    index = client.get("/admin/")
    assert index.status_code == 200
    assert index.context["app_list"] == []
    for model in [License, *LICENSE_OWNED]:
        assert client.get(_url(model)).status_code == 403


def test_an_invited_owner_sees_nothing(license):
    invited_owner = AgentFactory(license=license, roles=["owner"], status="invited")
    client = staff(invited_owner)
    assert client.get(_url(Team)).status_code == 403


def test_a_superuser_sees_every_license(superuser, license, theirs):
    response = superuser.get(_url(Team))
    assert {team.license_id for team in response.context["cl"].result_list} == {
        license.pk,
        theirs[License].pk,
    }
