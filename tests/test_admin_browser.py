"""The real admin in headless Chromium (Debian's package, driven by Playwright): sign in, create a team, put an
agent in it, move a ticket to spam, and find the changes in the audit log as the administrator's (tickets are
not audited: the spec's audit targets have none). Screenshots are saved under test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.db import connections

from accounts.models import Account, Agent, Team
from audit.models import AuditEntry
from tests.factories import AgentFactory, LicenseFactory, TicketFactory
from tickets.models import Ticket

CHROMIUM = os.environ.get("HELPDESK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

pytestmark = pytest.mark.browser


def _browser_or_skip():
    """Playwright's sync API, or a skip with the reason (a failure under CI=true, where it must run)."""
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "the playwright package is not installed (pip install -r requirements.txt)"
    if reason is None and not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        reason = f"no Chromium at {CHROMIUM} (tests/run.sh installs Debian's chromium when run as root)"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser test cannot run under CI: {reason}")
        pytest.skip(reason)
    return sync_playwright


@pytest.fixture
def browser_page(monkeypatch):
    sync_playwright = _browser_or_skip()
    # Playwright's sync API keeps an event loop on this thread; the test's own ORM calls are still synchronous
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(10_000)
            yield page
        finally:
            browser.close()
            # under Playwright's event loop the ORM used a connection of its own (asgiref's context-local
            # connections): close it, or the test database cannot be dropped at the end
            connections.close_all()


def _pick(page, field: str, search: str, option: str) -> None:
    """Choose `option` in an autocomplete (select2) field by typing `search`, as a person would."""
    page.click(f".field-{field} .select2-selection")
    page.fill(".select2-container--open .select2-search__field", search)
    page.click(f".select2-results__option:has-text('{option}')")


def test_an_admin_works_in_the_browser_and_the_audit_log_shows_it(
    transactional_db, live_server, browser_page
):
    # given a license with an agent, and a support admin
    license = LicenseFactory(company_name="Browser Corp")
    agent = AgentFactory(license=license, name="Bea Browser")
    ticket = TicketFactory(license=license, subject="Buy cheap watches")
    TicketFactory(license=license, subject="Where is my order?")
    Account.objects.create_superuser(email="support@example.com", password="correct horse battery")
    page = browser_page

    # when the admin signs in
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "support@example.com")
    page.fill("#id_password", "correct horse battery")
    page.click("input[type=submit]")
    page.wait_for_selector("text=Support administration")

    # and creates a team, choosing its license by autocomplete
    page.goto(f"{live_server.url}/admin/accounts/team/add/")
    _pick(page, "license", "Browser", "Browser Corp")
    page.fill("#id_name", "Escalations")
    page.check("#id_tag_reminder")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    team = Team.objects.get(license=license, name="Escalations")
    assert team.settings["tagReminder"] is True

    # and puts the agent into it (the autocomplete offers the agent's license's teams)
    page.goto(f"{live_server.url}/admin/accounts/agent/{agent.pk}/change/")
    _pick(page, "teams", "Esc", "Escalations")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist .success")
    assert list(Agent.objects.get(pk=agent.pk).teams.all()) == [team]

    # and moves a ticket to spam with the list's action
    page.goto(f"{live_server.url}/admin/tickets/ticket/")
    page.locator("#result_list tr", has_text="Buy cheap watches").locator("input.action-select").check()
    page.select_option("select[name=action]", "move_to_silo")
    page.select_option("select[name=silo]", "spam")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist .success")
    assert Ticket.objects.get(pk=ticket.pk).silo == "spam"
    page.goto(f"{live_server.url}/admin/tickets/ticket/?silo__exact=spam")
    assert page.locator("#result_list tbody tr").count() == 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "admin-tickets-spam.png"), full_page=True)

    # then the audit log lists the team and agent changes as the administrator's
    page.goto(f"{live_server.url}/admin/audit/auditentry/?author_type__exact=administrator")
    rows = page.locator("#result_list tbody tr")
    texts = [rows.nth(i).inner_text() for i in range(rows.count())]
    assert any("Escalations" in t and "create" in t and "teams" in t for t in texts), texts
    assert any("Bea Browser" in t and "update" in t and "agents" in t for t in texts), texts
    entry = AuditEntry.objects.get(target="agents", object_id=str(agent.pk), action="update")
    assert entry.author_type == "administrator" and entry.author_email == "support@example.com"
    assert entry.changes["teamIDs"]["after"] == [str(team.pk)]

    # and the entry's page shows the change field by field; a screenshot of the log is kept
    page.goto(f"{live_server.url}/admin/audit/auditentry/{entry.pk}/change/")
    page.wait_for_selector("text=teamIDs")
    page.goto(f"{live_server.url}/admin/audit/auditentry/?author_type__exact=administrator")
    screenshot = ARTIFACTS / "admin-audit-log.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
