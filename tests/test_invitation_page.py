"""The invitation e-mail's link opens a page (no 404) where the invitee accepts and may choose a password."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.core import mail as django_mail
from django.test import Client

from accounts.models import STATUS_ACTIVE, STATUS_INVITED, Agent


@pytest.fixture
def link(owner, settings, eager_tasks, django_capture_on_commit_callbacks):
    settings.HELPDESK_APP_URL = "http://127.0.0.1:8123"
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(
            "/v1/agents",
            {"email": "ivy@example.com", "roles": ["normal"], "status": "invited"},
            format="json",
        )
    assert response.status_code == 201
    [sent] = django_mail.outbox
    return re.search(r"http://127\.0\.0\.1:8123(/invitations/accept\?token=\S+)", sent.body).group(1)


def _form(page) -> dict:
    html = page.content.decode()
    fields = dict(re.findall(r'name="(csrfmiddlewaretoken|token)" value="([^"]+)"', html))
    return {name: unescape(value) for name, value in fields.items()}


def test_the_link_opens_a_page_where_the_invitee_accepts_with_a_password(link):
    browser = Client(enforce_csrf_checks=True)
    # the link from the e-mail, on the app's address, opens a page (GET changes nothing)
    page = browser.get(link)
    assert page.status_code == 200
    assert b"ivy@example.com" in page.content and b"Accept the invitation" in page.content
    agent = Agent.objects.get(email="ivy@example.com")
    assert agent.status == STATUS_INVITED
    # pressing the button with a password accepts the invitation
    form = _form(page) | {"password": "correct horse battery", "password_again": "correct horse battery"}
    done = browser.post("/invitations/accept", form)
    assert done.status_code == 200, done.content
    assert b"You are now an agent" in done.content
    assert re.search(rb"<code>hdp_[^<]+</code>", done.content)  # the first API token, shown once
    agent.refresh_from_db()
    assert agent.status == STATUS_ACTIVE
    assert agent.account.check_password("correct horse battery")
    # the link is used up
    again = browser.get(link)
    assert again.status_code == 400 and b"not valid" in again.content


def test_without_a_password_it_accepts_too(link):
    browser = Client()
    form = _form(browser.get(link))
    done = browser.post("/invitations/accept", form)
    assert done.status_code == 200
    agent = Agent.objects.get(email="ivy@example.com")
    assert agent.status == STATUS_ACTIVE and not agent.account.has_usable_password()


def test_differing_or_weak_passwords_change_nothing(link):
    browser = Client()
    form = _form(browser.get(link))
    differ = browser.post(
        "/invitations/accept", form | {"password": "correct horse battery", "password_again": "x"}
    )
    assert differ.status_code == 400 and b"differ" in differ.content
    weak = browser.post("/invitations/accept", form | {"password": "123", "password_again": "123"})
    assert weak.status_code == 400 and b"password" in weak.content
    assert Agent.objects.get(email="ivy@example.com").status == STATUS_INVITED


def test_a_forged_link_shows_an_error_page(db):
    page = Client().get("/invitations/accept?token=garbage")
    assert page.status_code == 400 and b"not valid" in page.content
