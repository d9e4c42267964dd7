"""POST /v1/licenses: first login creates the license with all its defaults, in one transaction."""

import pytest

from accounts import services
from accounts.models import ROLE_OWNER, STATUS_ACTIVE, Account, Agent, License, Team
from billing.models import Charge, Subscription
from templates_app.models import Template
from tests.conftest import api_client
from tests.spec import FIELDS


@pytest.fixture
def newcomer(db):
    """An account that has just signed up: a token, no license yet."""
    account = Account.objects.create_user(email="new@example.com", name="Nina New")
    _, token = services.token_issue(account=account, name="signup")
    account.client = api_client(account.pk, token)
    return account


def test_it_creates_the_license_with_its_team_template_and_owner(newcomer):
    # when a new account creates its license
    response = newcomer.client.post(
        "/v1/licenses",
        {
            "planCode": "hd-team1m",
            "couponCode": "WELCOME",
            "source": {"utmSource": "ads", "referrer": "x.com"},
        },
        format="json",
    )
    # then the license comes back with its defaults
    assert response.status_code == 201, response.json()
    body = response.json()
    assert list(body) == [*FIELDS["License"], "subscription"]  # ours: the license's subscription summary
    license = License.objects.get(pk=body["ID"])
    assert body["defaultTeamID"] == str(license.default_team_id)
    assert body["defaultTemplateID"] == str(license.default_template_id)
    assert body["source"]["utmSource"] == "ads" and body["source"]["referrer"] == "x.com"
    assert (
        body["createdBy"] == str(license.agents.get(account=newcomer).pk) and body["createdByType"] == "agent"
    )
    # and the team, the template and the caller as its active owner exist in that license
    assert Team.objects.for_license(license).get().pk == license.default_team_id
    template = Template.objects.for_license(license).get()
    assert template.pk == license.default_template_id and template.type == "visual"
    owner = Agent.objects.for_license(license).get()
    assert (owner.account_id, owner.roles, owner.status) == (newcomer.pk, [ROLE_OWNER], STATUS_ACTIVE)
    assert list(owner.teams.all()) == [license.default_team]
    # and a free trial on the chosen plan, keeping the coupon for the first charge
    trial = Subscription.objects.for_license(license).get()
    assert (trial.plan_code, trial.is_trial, trial.coupon_code) == ("hd-team1m", True, "WELCOME")
    assert body["subscription"]["state"] == "active" and body["subscription"]["planCode"] == "hd-team1m"
    assert not Charge.objects.exists()
    # and the caller can now use it
    assert newcomer.client.get(f"/v1/licenses/{license.pk}").status_code == 200


def test_an_unknown_coupon_creates_nothing(newcomer):
    response = newcomer.client.post(
        "/v1/licenses", {"planCode": "hd-team1m", "couponCode": "NOPE"}, format="json"
    )
    assert response.status_code == 400
    assert "couponCode" in response.json()["details"]
    assert not License.objects.exists() and not Agent.objects.exists()


def test_a_failing_trial_leaves_nothing_half_created(newcomer, monkeypatch):
    import billing.services

    def broken_trial(**kwargs):
        raise RuntimeError("billing down")

    monkeypatch.setattr(billing.services, "subscription_start_trial", broken_trial)
    response = newcomer.client.post("/v1/licenses", {"planCode": "hd-team1m"}, format="json")
    assert response.status_code == 500
    assert not License.objects.exists() and not Team.objects.exists() and not Template.objects.exists()
    assert not Agent.objects.exists() and not Subscription.objects.exists()


def test_a_second_license_is_a_409(newcomer):
    assert newcomer.client.post("/v1/licenses", {"planCode": "hd-team1m"}, format="json").status_code == 201
    response = newcomer.client.post("/v1/licenses", {"planCode": "hd-team3m"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "license_exists"
    assert License.objects.count() == 1


def test_an_agent_of_another_license_already_has_one(owner):
    response = owner.client.post("/v1/licenses", {"planCode": "hd-team1m"}, format="json")
    assert response.status_code == 409


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "planCode"),
        ({"planCode": "hd-free"}, "planCode"),
        ({"planCode": "hd-team1m", "couponCode": 5}, "couponCode"),
        ({"planCode": "hd-team1m", "source": {"utmSource": 1}}, "source"),
        ({"planCode": "hd-team1m", "source": {"evil": "x"}}, "source"),
        ({"planCode": "hd-team1m", "settings": {}}, "settings"),
    ],
)
def test_it_validates_the_body(newcomer, body, field):
    response = newcomer.client.post("/v1/licenses", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["details"]
    assert not License.objects.exists()


def test_a_failure_in_the_middle_leaves_nothing_half_created(newcomer, monkeypatch):
    # given the owner agent cannot be written (after the license, team and template were)
    original = services.stamp_create

    def failing_stamp(obj):
        if isinstance(obj, Agent):
            raise RuntimeError("disk full")
        original(obj)

    monkeypatch.setattr(services, "stamp_create", failing_stamp)
    # when the account creates its license
    response = newcomer.client.post("/v1/licenses", {"planCode": "hd-team1m"}, format="json")
    # then it fails and nothing of it remains
    assert response.status_code == 500
    assert response.json()["code"] == "server_error"
    assert not License.objects.exists()
    assert not Team.objects.exists()
    assert not Template.objects.exists()
    assert not Agent.objects.exists()
    # and a retry succeeds
    monkeypatch.setattr(services, "stamp_create", original)
    assert newcomer.client.post("/v1/licenses", {"planCode": "hd-team1m"}, format="json").status_code == 201


def test_license_create_without_a_token_is_a_401(client):
    response = client.post(
        "/v1/licenses", {"planCode": "hd-team1m"}, content_type="application/json", HTTP_USER_AGENT="t"
    )
    assert response.status_code == 401


def test_the_operator_command_gives_the_same_defaults(db):
    from django.core.management import call_command

    call_command("create_license", "--owner-email", "ops@example.com", "--json")
    license = License.objects.get()
    assert license.default_template is not None and license.default_team is not None
    assert Subscription.objects.for_license(license).get().is_trial
