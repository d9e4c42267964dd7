"""The OAuth consent page in headless Chromium (Debian's, driven by Playwright, as the admin test): an owner
signs in, sees the app, the license and the scopes in words, approves; the test exchanges the code with its
PKCE verifier at /oauth/token and calls the API with the Bearer token. A denial gives the app no code.
A screenshot of the consent page is saved under test-artifacts/.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from accounts.models import ROLE_OWNER
from accounts.oauth import services
from tests.factories import AgentFactory, LicenseFactory, TicketFactory
from tests.test_admin_browser import ARTIFACTS, browser_page  # noqa: F401  (the fixture)

pytestmark = pytest.mark.browser
PASSWORD = "correct horse battery"


def _pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _authorize_url(base, client_id, redirect_uri, challenge, state):
    query = {
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
        "scope": "tickets--all:ro", "state": state, "code_challenge": challenge, "code_challenge_method": "S256",
    }  # fmt: skip
    return f"{base}/oauth/authorize?{urlencode(query)}"


def test_an_owner_connects_an_app_in_the_browser(transactional_db, live_server, browser_page):  # noqa: F811
    # given a license with a ticket, an owner with a password, and an app whose redirect URI the test serves
    license = LicenseFactory(company_name="Browser Corp")
    TicketFactory(license=license, subject="Where is my order?")
    owner = AgentFactory(license=license, roles=[ROLE_OWNER], name="Olivia Owner")
    owner.account.set_password(PASSWORD)
    owner.account.save()
    redirect_uri = f"{live_server.url}/callback"
    app, secret = services.app_create(
        license=license, account=owner.account, name="Acme CRM", redirect_uris=[redirect_uri],
        scopes=["tickets--all:ro"],
    )  # fmt: skip
    client_id = app.application.client_id
    verifier, challenge = _pkce()
    page = browser_page

    # when the owner opens the app's authorize link: they are asked to sign in first
    page.goto(_authorize_url(live_server.url, client_id, redirect_uri, challenge, "s1"))
    page.wait_for_selector("text=Sign in with your HelpDesk account")
    page.fill("input[name=username]", owner.account.email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")

    # then the consent page names the app, the license and the scopes in words
    page.wait_for_selector("#authorizationForm")
    assert page.inner_text(".app-name") == "Acme CRM"
    assert page.inner_text(".license") == "Browser Corp"
    assert page.inner_text("ul.scopes") == "Read all tickets, their messages and attachments"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "oauth-consent.png"), full_page=True)

    # when they approve, the browser lands on the redirect URI with a code and the state
    page.click("button[name=allow]")
    page.wait_for_url(f"{redirect_uri}?*")
    params = parse_qs(urlsplit(page.url).query)
    assert params["state"] == ["s1"]

    # and the app exchanges the code with its PKCE verifier
    tokens = httpx.post(
        f"{live_server.url}/oauth/token",
        data={
            "grant_type": "authorization_code", "code": params["code"][0], "redirect_uri": redirect_uri,
            "code_verifier": verifier, "client_id": client_id, "client_secret": secret,
        },
    )  # fmt: skip
    assert tokens.status_code == 200, tokens.text
    access_token = tokens.json()["access_token"]

    # then it reads the license's tickets as the owner, and cannot write them
    headers = {"Authorization": f"Bearer {access_token}"}
    tickets = httpx.get(f"{live_server.url}/v1/tickets", headers=headers)
    assert tickets.status_code == 200, tickets.text
    assert [t["subject"] for t in tickets.json()] == ["Where is my order?"]
    write = httpx.post(f"{live_server.url}/v1/tickets", headers=headers, json={"subject": "x"})
    assert write.status_code == 403

    # when the owner is asked again and denies, the app gets an error and no code
    page.goto(_authorize_url(live_server.url, client_id, redirect_uri, challenge, "s2"))
    page.click("button[name=deny]")
    page.wait_for_url(f"{redirect_uri}?*")
    denied = parse_qs(urlsplit(page.url).query)
    assert denied["error"] == ["access_denied"] and "code" not in denied
