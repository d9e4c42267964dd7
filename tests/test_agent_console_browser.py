"""An agent's day in the console, in headless Chromium (issue 30): a normal agent invited by e-mail accepts the
invitation, chooses a password and signs in; its ticket list opens on its open tickets with the license's views
counted in the sidebar; from a view it opens a ticket, inserts a canned response by its shortcut, applies a macro
and sends; a viewer finds no way to write.

Screenshots of the agent's list and ticket page go to test-artifacts/, and to docs/img/ (agent-list.png,
agent-ticket.png, referenced from the README) when HELPDESK_DOCS_SCREENSHOTS=1.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.core import mail as django_mail

from accounts import services as account_services
from tests.factories import AgentFactory, LicenseFactory, TeamFactory, TicketFactory
from tests.test_admin_browser import ARTIFACTS, browser_page  # noqa: F401 (the fixture)
from tickets.canned_responses.services import canned_response_create
from tickets.macros.services import macro_create
from tickets.models import Ticket
from tickets.saved_views.services import view_create

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
DOCS_IMG = Path(__file__).resolve().parent.parent / "docs" / "img"


def _screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    if os.environ.get("HELPDESK_DOCS_SCREENSHOTS") == "1":
        page.screenshot(path=str(DOCS_IMG / name), full_page=True)


def _sign_in(page, base, email):
    page.goto(f"{base}/admin/")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


def test_an_invited_agent_works_a_ticket_from_a_view_and_a_viewer_cannot_write(
    transactional_db,
    live_server,
    browser_page,  # noqa: F811 (the fixture imported above)
    settings,
    eager_tasks,
):
    # given a license with a team, its tickets, a shared view, a canned response and a macro
    settings.HELPDESK_APP_URL = live_server.url
    license = LicenseFactory(company_name="Lamplight")
    team = TeamFactory(license=license, name="Repairs")
    for subject, name in (("Lamp arrived broken", "Jane Client"), ("Where is my order?", "Omar Client")):
        TicketFactory(
            license=license, subject=subject, teams=[team], assignment={"team": team},
            requester={"email": f"{name.split()[0].lower()}@example.com", "name": name},
        )  # fmt: skip
    TicketFactory(
        license=license, subject="Invoice copy", requester={"email": "li@example.com", "name": "Li"}
    )
    view_create(license=license, author=None, name="Repairs queue", filters={"teamIDs[]": [str(team.pk)]})
    canned_response_create(
        license=license, text="Hello {{requester.name}}, a replacement is on its way.", shortcuts=["replace"]
    )
    macro_create(
        license=license, name="Wait for the customer", visibility="shared",
        actions=[{"type": "setStatus", "value": "pending"}],
    )  # fmt: skip
    # and a normal agent invited by e-mail (accounts.services, as POST /v1/agents)
    account_services.agent_create(
        license=license, email="nora@example.com", roles=["normal"], name="Nora Agent"
    )
    [invitation] = [m for m in django_mail.outbox if "nora@example.com" in m.to]
    link = re.search(r"(https?://\S+/invitations/accept\?token=\S+)", invitation.body).group(1)
    page = browser_page

    # when Nora accepts the invitation with a password and signs in
    page.goto(link)
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=password_again]", PASSWORD)
    page.click("button[type=submit]")
    page.click("text=Sign in to the help desk")
    page.fill("#id_username", "nora@example.com")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")

    # then her ticket list opens on her open tickets, with the views counted in the sidebar
    page.goto(f"{live_server.url}/admin/tickets/ticket/")
    sidebar = page.locator("#changelist-filter")
    assert sidebar.locator("li.selected", has_text="My open tickets (0)").count() == 1
    page.click("#changelist-filter >> text=Repairs queue (2)")
    page.wait_for_selector("#changelist-filter li.selected:has-text('Repairs queue')")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    _screenshot(page, "agent-list.png")

    # and from the view she opens a ticket, inserts the canned response by its shortcut, applies the macro
    page.click("#result_list >> text=Lamp arrived broken")
    page.wait_for_selector("#id_canned_shortcut")
    page.fill("#id_canned_shortcut", "replace")
    page.press("#id_canned_shortcut", "Enter")
    page.wait_for_function("document.getElementById('id_reply').value.includes('Jane Client')")
    assert page.input_value("#id_reply") == "Hello Jane Client, a replacement is on its way."
    page.select_option("#id_macro", label="Wait for the customer")
    _screenshot(page, "agent-ticket.png")
    page.click("input[name=_continue]")
    page.wait_for_selector(".messagelist .success")
    ticket = Ticket.objects.get(subject="Lamp arrived broken")
    assert ticket.status == "pending"
    assert ticket.messages.filter(text="Hello Jane Client, a replacement is on its way.").exists()
    assert "a replacement is on its way" in page.locator(".helpdesk-conversation").inner_text()
    page.click("#logout-form button")
    page.wait_for_selector("text=Log in again")

    # and a viewer of the license finds no way to write
    viewer = AgentFactory(license=license, roles=["viewer"])
    viewer.account.set_password(PASSWORD)
    viewer.account.save()
    _sign_in(page, live_server.url, viewer.account.email)
    page.goto(f"{live_server.url}/admin/tickets/ticket/?view=all")
    assert page.locator("select[name=action]").count() == 0
    assert page.locator("a.addlink").count() == 0
    page.click("#result_list >> text=Where is my order?")
    page.wait_for_selector(".helpdesk-conversation")
    assert page.locator("textarea, input[name=_save], input[name=_continue]").count() == 0
    assert page.locator(".helpdesk-conversation").count() == 1
