"""Invitations: creating an `invited` agent e-mails a signed, expiring, single-use link; re-inviting."""

import datetime as dt
import re

import pytest
import time_machine
from django.core import mail as django_mail
from rest_framework.test import APIClient

from accounts import services
from accounts.models import STATUS_ACTIVE, STATUS_INVITED, Account, Agent
from templates_app.invitations import invitation_token
from templates_app.models import Invitation
from tests.conftest import api_client

ACCEPT = "/v1/invitations/accept"


def anonymous() -> APIClient:
    return APIClient(HTTP_USER_AGENT="helpdesk-tests/1.0")


def _invite(owner, email="invitee@example.com", callbacks=None):
    response = owner.client.post(
        "/v1/agents", {"email": email, "roles": ["normal"], "status": "invited", "name": "Ivy"}, format="json"
    )
    assert response.status_code == 201, response.json()
    return Agent.objects.get(pk=response.json()["ID"])


def _token_from(message) -> str:
    return re.search(r"token=([^\s&\"<]+)", message.body).group(1).replace("%3A", ":")


@pytest.fixture
def invited(owner, eager_tasks, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return _invite(owner)


def test_creating_an_invited_agent_emails_the_invitation(owner, invited):
    # then an invitation e-mail, made from the license's template, went to the invitee
    [sent] = django_mail.outbox
    assert sent.to == ["invitee@example.com"]
    assert sent.subject == "You are invited to join Acme on HelpDesk"
    assert "Owner invited you to join Acme on HelpDesk." in sent.body
    assert "http://localhost:8000/invitations/accept?token=" in sent.body
    assert "expires in 7 days" in sent.body
    assert "invitations/accept?token=" in sent.alternatives[0][0]
    assert invited.status == STATUS_INVITED


def test_every_new_agent_is_invited(owner, eager_tasks, django_capture_on_commit_callbacks):
    # even when the body asks for `active`: only the person who proves the address makes it active (issue 36)
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(
            "/v1/agents", {"email": "a@example.com", "roles": ["normal"], "status": "active"}, format="json"
        )
    assert response.json()["status"] == "invited"
    assert [sent.to for sent in django_mail.outbox] == [["a@example.com"]]


def test_accepting_activates_the_agent_and_returns_a_first_token(invited):
    # when the invitee follows the link and chooses a password
    token = _token_from(django_mail.outbox[0])
    response = anonymous().post(ACCEPT, {"token": token, "password": "correct horse battery"}, format="json")
    # then the agent is active and the answer carries the first personal access token
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["agentID"] == str(invited.pk) and body["licenseID"] == invited.license_id
    invited.refresh_from_db()
    assert invited.status == STATUS_ACTIVE
    account = Account.objects.get(pk=body["accountID"])
    assert account.check_password("correct horse battery")
    # and the token works
    me = api_client(body["accountID"], body["token"]).get("/v1/agents")
    assert me.status_code == 200


def test_the_password_is_optional_and_validated(invited):
    token = _token_from(django_mail.outbox[0])
    weak = anonymous().post(ACCEPT, {"token": token, "password": "123"}, format="json")
    assert weak.status_code == 400 and "password" in weak.json()["details"]
    ok = anonymous().post(ACCEPT, {"token": token}, format="json")
    assert ok.status_code == 200 and ok.json()["token"].startswith("hdp_")
    assert not Account.objects.get(pk=ok.json()["accountID"]).has_usable_password()


def test_an_accepted_link_cannot_be_reused(invited):
    token = _token_from(django_mail.outbox[0])
    assert anonymous().post(ACCEPT, {"token": token}, format="json").status_code == 200
    again = anonymous().post(ACCEPT, {"token": token}, format="json")
    assert again.status_code == 409
    assert again.json()["code"] == "invitation_used"


def test_an_expired_link_is_refused(invited):
    token = _token_from(django_mail.outbox[0])
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(days=7, minutes=1)):
        response = anonymous().post(ACCEPT, {"token": token}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invitation_expired"
    invited.refresh_from_db()
    assert invited.status == STATUS_INVITED


def test_a_link_works_until_it_expires(invited):
    token = _token_from(django_mail.outbox[0])
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(days=6, hours=23)):
        assert anonymous().post(ACCEPT, {"token": token}, format="json").status_code == 200


def test_the_expiry_is_a_setting(invited, settings):
    settings.HELPDESK_INVITATION_MAX_AGE_DAYS = 1
    token = _token_from(django_mail.outbox[0])
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(days=1, minutes=1)):
        assert (
            anonymous().post(ACCEPT, {"token": token}, format="json").json()["code"] == "invitation_expired"
        )


@pytest.mark.parametrize("token", ["garbage", "", "00000000-0000-0000-0000-000000000000:abc:def"])
def test_a_forged_link_is_refused(db, token):
    response = anonymous().post(ACCEPT, {"token": token}, format="json")
    assert response.status_code == 400


def test_a_link_signed_for_something_else_is_refused(invited):
    from django.core import signing

    forged = signing.TimestampSigner(salt="other.purpose").sign(str(Invitation.objects.get().pk))
    response = anonymous().post(ACCEPT, {"token": forged}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invitation_invalid"


def test_reinviting_sends_a_new_link_and_kills_the_old_one(
    owner, invited, django_capture_on_commit_callbacks
):
    old_token = _token_from(django_mail.outbox[0])
    # when the owner re-invites
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(f"/v1/agents/{invited.pk}/invite", format="json")
    # then a second e-mail left, and only its link works
    assert response.status_code == 200 and response.json()["status"] == "invited"
    assert len(django_mail.outbox) == 2
    new_token = _token_from(django_mail.outbox[1])
    assert new_token != old_token
    old = anonymous().post(ACCEPT, {"token": old_token}, format="json")
    assert old.status_code == 409 and old.json()["code"] == "invitation_revoked"
    assert anonymous().post(ACCEPT, {"token": new_token}, format="json").status_code == 200


def test_an_active_agent_cannot_be_reinvited(owner, agent):
    response = owner.client.post(f"/v1/agents/{agent.agent.pk}/invite", format="json")
    assert response.status_code == 409 and response.json()["code"] == "agent_active"


@pytest.mark.parametrize(("role", "status"), [("normal", 403), ("viewer", 403)])
def test_only_owners_reinvite(personas, invited, role, status):
    assert personas[role].client.post(f"/v1/agents/{invited.pk}/invite", format="json").status_code == status


def test_an_outsider_cannot_reinvite(outsider, invited):
    assert outsider.client.post(f"/v1/agents/{invited.pk}/invite", format="json").status_code == 404


def test_an_existing_account_accepts_only_while_signed_in(
    owner, other_license, eager_tasks, django_capture_on_commit_callbacks
):
    # given the owner of another license, who holds a token, is invited here
    other_owner = other_license.agents.get()
    _, pat = services.token_issue(account=other_owner.account)
    with django_capture_on_commit_callbacks(execute=True):
        invited = _invite(owner, email=other_owner.email)
    token = _token_from(django_mail.outbox[0])
    # when the link is used without signing in, it is refused (a leaked link cannot take the account over)
    refused = anonymous().post(ACCEPT, {"token": token, "password": "correct horse battery"}, format="json")
    assert refused.status_code == 403
    # when the account itself accepts, the membership is active and no new token is handed out
    accepted = api_client(other_owner.account_id, pat).post(ACCEPT, {"token": token}, format="json")
    assert accepted.status_code == 200 and accepted.json()["token"] is None
    invited.refresh_from_db()
    assert invited.status == STATUS_ACTIVE


def test_another_signed_in_account_cannot_accept(invited, outsider):
    token = _token_from(django_mail.outbox[0])
    assert outsider.client.post(ACCEPT, {"token": token}, format="json").status_code == 403


def test_the_link_carries_the_invitation_row(invited):
    invitation = Invitation.objects.get(agent=invited)
    assert invitation_token(invitation).startswith(str(invitation.pk))


def test_the_link_of_a_deleted_agent_is_invalid(owner, invited):
    token = _token_from(django_mail.outbox[0])
    assert owner.client.delete(f"/v1/agents/{invited.pk}").status_code == 204
    response = anonymous().post(ACCEPT, {"token": token}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invitation_invalid"


def test_a_read_only_personal_token_cannot_accept(
    owner, other_license, eager_tasks, django_capture_on_commit_callbacks
):
    # given the owner of another license is invited here and holds a token with only `accounts--my:ro`
    other_owner = other_license.agents.get()
    with django_capture_on_commit_callbacks(execute=True):
        invited = _invite(owner, email=other_owner.email)
    token = _token_from(django_mail.outbox[0])
    _, read_only = services.token_issue(account=other_owner.account, scopes=["accounts--my:ro"])
    # when that token accepts, it is refused: accepting is a write
    response = api_client(other_owner.account_id, read_only).post(ACCEPT, {"token": token}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "insufficient_scope"
    invited.refresh_from_db()
    assert invited.status == STATUS_INVITED
    assert Invitation.objects.get(agent=invited).accepted_at is None


def test_no_oauth_token_accepts_an_invitation(
    owner, other_license, eager_tasks, django_capture_on_commit_callbacks
):
    from tests.oauth_helpers import bearer_client, make_grant

    # given the owner of another license approved an app for tags there, and is invited here
    other_owner = other_license.agents.get()
    grant = make_grant(other_license, agent=other_owner, scopes=("tags--all:rw",))
    with django_capture_on_commit_callbacks(execute=True):
        invited = _invite(owner, email=other_owner.email)
    token = _token_from(django_mail.outbox[0])
    # when the app accepts the invitation with its token, it is refused (no scope covers joining a license)
    response = bearer_client(grant.plaintext).post(ACCEPT, {"token": token}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "insufficient_scope"
    invited.refresh_from_db()
    assert invited.status == STATUS_INVITED


def test_an_address_another_license_typed_first_is_still_its_persons(
    owner, other_license, eager_tasks, django_capture_on_commit_callbacks
):
    from tests.factories import AgentFactory

    # given license A made an active agent for an address nobody had proved (as it could before issue 36)
    account = services.account_get_or_create(email="pat@example.com")
    squatter = AgentFactory(license=other_license, account=account, email=account.email, status=STATUS_ACTIVE)
    # when this license invites the same person, who accepts the link without signing in
    with django_capture_on_commit_callbacks(execute=True):
        invited = _invite(owner, email="pat@example.com")
    token = _token_from(django_mail.outbox[0])
    response = anonymous().post(ACCEPT, {"token": token, "password": "correct horse battery"}, format="json")
    # then the link proves the address: the person gets the account's first token and password
    assert response.status_code == 200, response.content
    assert response.json()["token"].startswith("hdp_")
    invited.refresh_from_db()
    assert invited.status == STATUS_ACTIVE
    account.refresh_from_db()
    assert account.check_password("correct horse battery")
    header = {"HTTP_X_LICENSE_ID": str(owner.license.pk)}
    assert api_client(account.pk, response.json()["token"]).get("/v1/teams", **header).status_code == 200
    assert squatter.account_id == account.pk  # license A's membership is the person's to keep or leave


def test_a_password_reset_by_email_works_for_an_account_without_a_password(db, settings, client):
    from tests.factories import AgentFactory, LicenseFactory

    # given an account a license created for an address (no password, no token)
    settings.HELPDESK_APP_URL = "https://desk.example.com"
    account = services.account_get_or_create(email="pat@example.com")
    AgentFactory(license=LicenseFactory(), account=account, email=account.email)
    assert not account.has_usable_password()
    # when its person asks for a reset
    assert client.get("/accounts/login/").content.count(b"/accounts/password_reset/") == 1
    asked = client.post("/accounts/password_reset/", {"email": "PAT@example.com"})
    assert asked.status_code == 302 and asked["Location"] == "/accounts/password_reset/done/"
    # then a real mail with a single-use link went to the address
    [sent] = django_mail.outbox
    assert sent.to == ["pat@example.com"] and sent.subject == "Choose your HelpDesk password"
    link = re.search(r"https://desk\.example\.com(/accounts/reset/\S+)", sent.body).group(1)
    form = client.get(link, follow=True)
    assert form.status_code == 200 and b"new_password1" in form.content
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "correct horse battery", "new_password2": "correct horse battery"},
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    account.refresh_from_db()
    assert account.check_password("correct horse battery")
    assert client.login(username="pat@example.com", password="correct horse battery")
    # and the link works once
    assert b"not valid any more" in client.get(link, follow=True).content


def test_a_password_reset_for_an_unknown_address_sends_nothing_and_says_the_same(db, client):
    asked = client.post("/accounts/password_reset/", {"email": "nobody@example.com"})
    assert asked.status_code == 302 and asked["Location"] == "/accounts/password_reset/done/"
    assert django_mail.outbox == []
