"""The admin index's dashboard (tickets/admin/dashboard.py): per license, what needs attention, scoped to the
signed-in user's licenses, in a fixed number of queries."""

from __future__ import annotations

import datetime
import re

import pytest
from django.utils import timezone

from templates_app.models import OutboundMessage
from tests.admin_helpers import staff, superuser_client
from tests.factories import LicenseFactory, TeamFactory, TicketFactory
from tickets import services
from tickets.models import Ticket
from tickets.models_purge import PurgeRun
from tickets.webhooks.models import STATUS_FAILING, Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


def _busy_license(company: str, n: int = 1):
    """A license with open, pending and solved tickets, a failed mail and webhook delivery, `n` of each."""
    license = LicenseFactory(company_name=company)
    support = TeamFactory(license=license, name="Support")
    for i in range(n):
        TicketFactory(license=license, subject=f"{company} open {i}", teams=[support])
        TicketFactory(license=license, subject=f"{company} pending {i}", status="pending")
        solved = TicketFactory(license=license, subject=f"{company} solved {i}")
        services.ticket_update(ticket=solved, status="solved")
        OutboundMessage.objects.create(
            license=license, key=f"k{i}", kind="reply", to="c@example.com", subject="s", text="t",
            status=OutboundMessage.STATUS_FAILED, last_error="550 mailbox unavailable",
        )  # fmt: skip
        hook = Webhook.objects.create(
            license=license, name=f"CRM {i}", url="https://crm.example.com/hook", event_type="tickets.create",
            secret="s", status=STATUS_FAILING,
        )  # fmt: skip
        WebhookDelivery.objects.create(license=license, webhook=hook, event_type="tickets.create", body="{}",
                                       status=WebhookDelivery.FAILED)  # fmt: skip
    return license


def _panel(html: str, license) -> str:
    match = re.search(rf'<section class="hd-panel" id="hd-license-{license.pk}">(.*?)</section>', html, re.S)
    assert match, f"no panel for license {license.pk}"
    return match.group(1)


def test_an_owner_sees_their_licenses_numbers_and_nothing_of_another(owner):
    # given the owner's busy license, an old waiting ticket, a purge run, and another license
    license = owner.agent.license
    acme = _busy_license("Elsewhere Ltd")
    support = TeamFactory(license=license, name="Support")
    for i in range(2):
        TicketFactory(license=license, subject=f"Mine open {i}", teams=[support])
    TicketFactory(license=license, subject="Mine pending", teams=[support], status="pending")
    old = TicketFactory(license=license, subject="Waiting since spring", teams=[support])
    Ticket.objects.filter(pk=old.pk).update(last_message_at=timezone.now() - datetime.timedelta(days=40))
    services.ticket_update(ticket=TicketFactory(license=license, subject="Done"), status="solved")
    OutboundMessage.objects.create(
        license=license, key="k", kind="reply", to="c@example.com", subject="s", text="t", status="failed"
    )
    PurgeRun.objects.create(
        status="finished", spam_cutoff=timezone.now(), trash_cutoff=timezone.now(),
        counts={str(license.pk): {"spam": 3, "trash": 1}}, finished_at=timezone.now(),
    )  # fmt: skip

    # when the owner opens the admin index
    html = staff(owner.agent).get("/admin/").content.decode()

    # then their license's panel shows the team's open and pending tickets
    panel = _panel(html, license)
    assert re.search(r"<td>Support</td><td class=\"hd-num\">3</td><td class=\"hd-num\">1</td>", panel), panel
    # and the chart of the last 30 days: 5 created today, 1 solved, as bars with their numbers
    assert "5 created, 1 solved" in panel
    assert "<svg" in panel and f"{timezone.localdate():%b %d}: 5 created" in panel
    assert f"{timezone.localdate():%b %d}: 1 solved" in panel
    # and the ticket waiting longest comes first, linked to its page
    oldest = re.search(r'class="hd-oldest">.*?<a href="([^"]+)">([^<]+)</a>', panel, re.S)
    assert oldest.group(
        1
    ) == f"/admin/tickets/ticket/{old.pk}/change/" and "Waiting since spring" in oldest.group(2)
    # and the failed mail, and what the last purge deleted of this license
    assert re.search(r"Outbound e-mail failed</td>\s*<td[^>]*hd-bad[^>]*><a [^>]*>1</a>", panel)
    assert "3 spam, 1 trash deleted" in panel
    failed_list = re.search(r'href="(/admin/templates_app/outboundmessage/[^"]+)"', panel).group(1)
    response = staff(owner.agent).get(failed_list.replace("&amp;", "&"))
    assert response.status_code == 200 and response.context["cl"].result_count == 1
    # and nothing of the other license
    assert f'id="hd-license-{acme.pk}"' not in html and "Elsewhere Ltd" not in html and "CRM 0" not in html


def test_a_superuser_sees_every_license_with_its_failures():
    acme, globex = _busy_license("Acme"), _busy_license("Globex")
    html = superuser_client().get("/admin/").content.decode()
    for license in (acme, globex):
        panel = _panel(html, license)
        assert "Webhook failing: CRM 0" in panel
        assert re.search(r"Webhook deliveries failed</td>\s*<td[^>]*hd-bad[^>]*>1</td>", panel)
    assert "never run" in html  # no purge yet


def test_the_dashboard_runs_as_many_queries_for_many_rows_and_licenses(django_assert_max_num_queries):
    # given one small license, then many more licenses with many rows
    _busy_license("Small")
    client = superuser_client()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        assert client.get("/admin/").status_code == 200
    for i in range(4):
        _busy_license(f"Big {i}", n=4)

    # then the index needs no more queries than with one license and one row of each
    with django_assert_max_num_queries(len(small)):
        assert client.get("/admin/").status_code == 200


def test_the_chart_reads_the_reports_and_downloads_as_csv(owner):
    # given tickets created today, one solved, one reopened and solved again (two resolutions), and another
    # license's ticket
    license = owner.agent.license
    TicketFactory(license=license)
    twice = TicketFactory(license=license)
    for status in ("solved", "open", "solved"):
        services.ticket_update(ticket=twice, status=status)
    TicketFactory(license=LicenseFactory(company_name="Elsewhere Ltd"))
    client = staff(owner.agent)
    # when the owner opens the dashboard and its CSV link
    panel = _panel(client.get("/admin/").content.decode(), license)
    link = re.search(r'href="([^"]*created-solved\.csv[^"]*)">CSV</a>', panel).group(1).replace("&amp;", "&")
    response = client.get(link)
    # then the numbers are the API's reports' (newTickets and resolutionTime over the same days)
    body = owner.client.get("/v1/reports/newTickets", {"from": "-29D", "to": "+1D", "timezone": "UTC"}).json()
    solved = owner.client.get("/v1/reports/resolutionTime", {"from": "-29D", "to": "+1D"}).json()
    assert "2 created, 2 solved" in panel
    assert (body["summary"]["count"], solved["summary"]["count"]) == (2, 2)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().splitlines()
    assert lines[0] == "date,created,solved" and lines[-1] == "total,2,2"
    assert lines[-2] == f"{timezone.localdate().isoformat()},2,2" and len(lines) == 32
    # and another license's CSV is not theirs
    assert client.get(link.replace(f"license={license.pk}", "license=999999")).status_code == 404
