"""Every active agent signs in to the console (issue 30): by the invitation's password, by a password chosen
from the reset e-mail, and out again; an account that is no active agent is refused at the sign-in page."""

from __future__ import annotations

import re

import pytest
from django.core import mail as django_mail
from django.test import Client

from accounts.models import Account
from tests.factories import AgentFactory

PASSWORD = "correct horse battery"


def _sign_in(client, email, password):
    return client.post("/admin/login/?next=/admin/", {"username": email, "password": password})


@pytest.mark.parametrize("role", ["owner", "normal", "viewer"])
def test_an_agent_of_any_role_signs_in_and_out(license, role):
    agent = AgentFactory(license=license, roles=[role])
    agent.account.set_password(PASSWORD)
    agent.account.save()
    client = Client()
    response = _sign_in(client, agent.email, PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    # and signs out (Django's admin: a POST)
    assert client.post("/admin/logout/").status_code == 200
    assert client.get("/admin/").status_code == 302


def test_an_account_that_is_no_active_agent_is_refused(license):
    Account.objects.create_user(email="left@example.com", password=PASSWORD)
    suspended = AgentFactory(license=license, status="disabled")
    suspended.account.set_password(PASSWORD)
    suspended.account.save()
    for email in ("left@example.com", suspended.email):
        response = _sign_in(Client(), email, PASSWORD)
        assert response.status_code == 200 and b"Please enter the correct" in response.content


def test_the_sign_in_page_offers_the_reset_and_its_link_leads_back_to_the_console(agent, settings):
    settings.HELPDESK_APP_URL = "https://desk.example.com"
    client = Client()
    # the console's sign-in page links to the reset by e-mail
    login = client.get("/admin/login/").content.decode()
    assert 'href="/admin/password_reset/"' in login
    assert client.get("/admin/password_reset/")["Location"] == "/accounts/password_reset/"
    # the e-mailed link opens the page where the agent chooses a password
    client.post("/accounts/password_reset/", {"email": agent.account.email})
    [sent] = django_mail.outbox
    path = re.search(r"https://desk\.example\.com(/accounts/reset/\S+)", sent.body).group(1)
    form = client.get(path, follow=True)
    assert form.status_code == 200
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": PASSWORD, "new_password2": PASSWORD}, follow=True
    )
    assert (
        b"Sign in to the help desk" in done.content and b'href="/admin/login/?next=/admin/"' in done.content
    )
    # and the password signs the agent in to the console
    assert _sign_in(Client(), agent.account.email, PASSWORD)["Location"] == "/admin/"


def test_signing_in_without_a_destination_opens_the_console(agent):
    agent.account.set_password(PASSWORD)
    agent.account.save()
    response = Client().post("/accounts/login/", {"username": agent.account.email, "password": PASSWORD})
    assert response["Location"] == "/admin/"
