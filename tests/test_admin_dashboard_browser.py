"""The dashboard and the ticket list/page in the real admin (headless Chromium): an owner signs in, reads their
license's panel (teams, the chart, the oldest waiting ticket, failures), follows the oldest ticket to its page,
and searches the list by a word of a message. Screenshots are saved under test-artifacts/."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from templates_app.models import OutboundMessage
from tests.factories import LicenseFactory, TeamFactory, TicketFactory
from tests.test_admin_browser import ARTIFACTS, browser_page  # noqa: F401 (the fixture)
from tickets import services
from tickets.models import Ticket

pytestmark = pytest.mark.browser


def test_an_owner_reads_the_dashboard_and_opens_the_oldest_ticket(
    transactional_db,
    live_server,
    browser_page,  # noqa: F811 (the fixture imported above)
):
    # given an owner's license with work in two teams over the last weeks, and another license
    license = LicenseFactory(company_name="Dash Corp", owner_email="boss@dash.example")
    LicenseFactory(company_name="Hidden Ltd")
    billing = TeamFactory(license=license, name="Billing")
    now = timezone.now()
    for day in range(0, 28, 3):
        ticket = TicketFactory(license=license, subject=f"Invoice question {day}", teams=[billing])
        Ticket.objects.filter(pk=ticket.pk).update(created_at=now - datetime.timedelta(days=day))
        if day % 2:
            services.ticket_update(ticket=ticket, status="solved")
    for i in range(3):
        TicketFactory(license=license, subject=f"Login trouble {i}", status="pending")
    oldest = TicketFactory(
        license=license, subject="Parcel never arrived", text="The courier lost my espresso cups"
    )
    Ticket.objects.filter(pk=oldest.pk).update(last_message_at=now - datetime.timedelta(days=12))
    OutboundMessage.objects.create(
        license=license,
        key="k1",
        kind="reply",
        to="jane@example.com",
        subject="Re: x",
        text="t",
        status="failed",
    )
    account = license.agents.get().account
    account.is_staff = True
    account.set_password("correct horse battery")
    account.save()
    page = browser_page

    # when the owner signs in
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "boss@dash.example")
    page.fill("#id_password", "correct horse battery")
    page.click("input[type=submit]")

    # then the index shows their license's panel, and not the other license
    panel = page.locator(f"#hd-license-{license.pk}")
    panel.wait_for()
    assert page.locator(".hd-panel").count() == 1 and "Hidden Ltd" not in page.content()
    teams = panel.locator("table").first.inner_text()
    assert "Billing" in teams and "General" in teams
    chart = panel.locator("svg.hd-chart")
    assert chart.is_visible() and chart.bounding_box()["width"] > 300
    assert chart.locator("rect title").count() == 60  # a created and a solved bar for each of 30 days
    assert panel.locator("td.hd-bad a").first.inner_text() == "1"  # the failed mail, linked
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "admin-dashboard.png"), full_page=True)

    # and the oldest waiting ticket leads to its page
    panel.locator(".hd-oldest a").first.click()
    page.wait_for_selector(".helpdesk-conversation")
    assert "Parcel never arrived" in page.locator("#id_subject").input_value()
    assert page.locator("#id_priority option:checked").inner_text() == "Normal"
    page.screenshot(path=str(ARTIFACTS / "admin-ticket-page.png"), full_page=True)

    # and the ticket list, searched by a word of the message, finds it, in columns that fit a laptop screen
    page.goto(f"{live_server.url}/admin/tickets/ticket/?q=espresso")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1 and "Parcel never arrived" in rows.first.inner_text()
    assert "Dash Corp" not in rows.first.inner_text()  # one license: no license column
    last_column = page.locator("#result_list thead th").last.bounding_box()
    assert last_column["x"] + last_column["width"] <= page.locator("#changelist-filter").bounding_box()["x"]
    page.screenshot(path=str(ARTIFACTS / "admin-ticket-list.png"), full_page=True)
