"""Every admin page loads for a superuser, and each change form saves through its service."""

import json

import pytest

from accounts.models import Account, Agent, License, PersonalAccessToken, Team
from audit.models import AuditEntry
from billing.models import Charge, IdempotencyRecord, Subscription
from templates_app.models import Invitation, OutboundMessage, Template
from tests.admin_helpers import form_data
from tests.factories import (
    AgentFactory,
    SubscriptionFactory,
    TagFactory,
    TeamFactory,
    TemplateFactory,
    TicketFactory,
)
from tickets.models import Tag, Ticket


@pytest.fixture
def world(license, owner):
    """One object of every kind the admin shows, in `license`."""
    from accounts import services

    subscription = SubscriptionFactory(license=license)
    Charge.objects.create(
        license=license, subscription=subscription, amount=500, currency="USD", reason="create",
        idempotency_key="k-1", status="succeeded",
    )  # fmt: skip
    IdempotencyRecord.objects.create(license=license, key="idem-1", fingerprint="f", status=201)
    OutboundMessage.objects.create(
        license=license, key="m-1", kind="test", to="a@example.com", subject="Hi", text="x"
    )
    invited = AgentFactory(license=license, status="invited")
    Invitation.objects.create(license=license, agent=invited)
    services.token_issue(account=owner.account, name="cli")
    TicketFactory(license=license, tags=[TagFactory(license=license)])
    return license


MODELS = [Account, PersonalAccessToken, License, Agent, Team, Template, Subscription, Charge, IdempotencyRecord,
          OutboundMessage, Invitation, AuditEntry, Ticket, Tag]  # fmt: skip


def _url(model, suffix=""):
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/{suffix}"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_list_and_change_pages_load(superuser, world, model):
    # given an object of every kind
    obj = model._default_manager.order_by("pk").first()
    # when/then the list, a search and the object's page load
    assert superuser.get(_url(model)).status_code == 200
    assert superuser.get(_url(model), {"q": "example"}).status_code == 200
    assert superuser.get(_url(model, f"{obj.pk}/change/")).status_code == 200


@pytest.mark.parametrize(
    "model",
    [Account, PersonalAccessToken, License, Agent, Team, Template, Ticket, Tag],
    ids=lambda m: m.__name__,
)
def test_add_pages_load(superuser, world, model):
    assert superuser.get(_url(model, "add/")).status_code == 200


@pytest.mark.parametrize(
    "model", [Subscription, Charge, IdempotencyRecord, OutboundMessage, Invitation, AuditEntry]
)
def test_ledgers_and_logs_cannot_be_added_to(superuser, world, model):
    assert superuser.get(_url(model, "add/")).status_code == 403


def test_the_index_is_the_helpdesk_admin(superuser, world):
    response = superuser.get("/admin/")
    assert b"HelpDesk admin" in response.content
    for name in (b"Licenses", b"Agents", b"Teams", b"Templates", b"Subscriptions", b"Audit log"):
        assert name in response.content


def test_the_license_form_saves_typed_settings(superuser, license):
    # given the license's change form as the browser has it
    url = _url(License, f"{license.pk}/change/")
    data = form_data(superuser.get(url))
    other_team = TeamFactory(license=license, name="Escalations")
    # when the admin changes a few settings and the default team
    data.update(company_name="Acme 2", max_child_tickets_per_ticket="40", default_team=str(other_team.pk))
    data.pop("powered_by_footer", None)
    response = superuser.post(url, data)
    # then they are saved with their types, the other settings untouched
    assert response.status_code == 302, response.context["adminform"].form.errors
    license.refresh_from_db()
    assert license.settings["companyName"] == "Acme 2"
    assert license.settings["maxChildTicketsPerTicket"] == 40
    assert license.settings["poweredByFooter"] is False
    assert license.settings["ticketThread"] is True
    assert license.default_team == other_team


def test_the_license_form_checks_types(superuser, license):
    url = _url(License, f"{license.pk}/change/")
    data = form_data(superuser.get(url)) | {"max_child_tickets_per_ticket": "lots"}
    response = superuser.post(url, data)
    assert response.status_code == 200
    assert "max_child_tickets_per_ticket" in response.context["adminform"].form.errors
    license.refresh_from_db()
    assert license.settings["maxChildTicketsPerTicket"] == 25


def test_the_team_form_adds_and_changes_a_team(superuser, license):
    # given an agent and a template of the license
    agent = AgentFactory(license=license)
    template = TemplateFactory(license=license)
    # when a team is added with settings, a template and an auto-assigned agent
    response = superuser.post(
        _url(Team, "add/"),
        {
            "license": license.pk,
            "name": "Billing",
            "reply_name": "Billing desk",
            "template": template.pk,
            "tag_reminder": "on",
            "autoassignment_agents": [agent.pk],
        },
    )
    # then it exists with them
    assert response.status_code == 302, response.context["adminform"].form.errors
    team = Team.objects.get(name="Billing")
    assert (team.reply_name, team.template, team.settings["tagReminder"]) == ("Billing desk", template, True)
    assert list(team.autoassignment_agents.all()) == [agent]
    # when it is renamed and its agent removed
    url = _url(Team, f"{team.pk}/change/")
    data = form_data(superuser.get(url)) | {"name": "Billing 2"}
    data.pop("autoassignment_agents")
    response = superuser.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    team.refresh_from_db()
    assert team.name == "Billing 2" and not team.autoassignment_agents.exists()
    assert team.settings["tagReminder"] is True


def test_the_agent_form_adds_and_changes_an_agent(superuser, license):
    team = TeamFactory(license=license, name="Support")
    response = superuser.post(
        _url(Agent, "add/"),
        {"license": license.pk, "email": "New@Example.com", "name": "New", "roles": ["normal", "viewer"],
         "status": "active", "teams": [team.pk]},
    )  # fmt: skip
    assert response.status_code == 302, response.context["adminform"].form.errors
    agent = Agent.objects.get(email="new@example.com")
    assert agent.roles == ["normal", "viewer"] and list(agent.teams.all()) == [team]
    url = _url(Agent, f"{agent.pk}/change/")
    data = form_data(superuser.get(url)) | {
        "teams": [str(team.pk), str(license.default_team_id)],
        "roles": ["owner"],
    }
    response = superuser.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    agent.refresh_from_db()
    assert agent.roles == ["owner"]
    assert set(agent.teams.all()) == {team, license.default_team}


def test_the_template_form_saves_and_previews(superuser, license):
    content = {"text": "Hello {{requester.name}}", "html": "", "appearance": {}}
    response = superuser.post(
        _url(Template, "add/"),
        {"license": license.pk, "name": "Welcome", "type": "visual", "content": json.dumps(content)},
    )
    assert response.status_code == 302
    template = Template.objects.get(name="Welcome")
    # the change page previews it, rendered with sample data
    page = superuser.get(_url(Template, f"{template.pk}/change/"))
    assert b"Hello Jane Doe" in page.content
    assert b'sandbox=""' in page.content
    data = form_data(page) | {"name": "Welcome 2"}
    assert superuser.post(_url(Template, f"{template.pk}/change/"), data).status_code == 302
    template.refresh_from_db()
    assert template.name == "Welcome 2" and template.content == content


def test_the_account_form_adds_and_changes_an_account(superuser, db):
    response = superuser.post(
        _url(Account, "add/"),
        {"email": "Someone@Example.com", "name": "Someone", "password1": "a-long-pass-phrase", "password2": "a-long-pass-phrase"},
    )  # fmt: skip
    assert response.status_code == 302, response.context["adminform"].form.errors
    account = Account.objects.get(email="someone@example.com")
    assert account.check_password("a-long-pass-phrase")
    url = _url(Account, f"{account.pk}/change/")
    data = form_data(superuser.get(url)) | {"name": "Some One", "is_staff": "on"}
    assert superuser.post(url, data).status_code == 302
    account.refresh_from_db()
    assert (account.name, account.is_staff) == ("Some One", True)
