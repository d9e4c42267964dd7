"""What support staff meet daily in the admin: a compact ticket list whose filters name the license, priorities
by name, search through message text (the API's full-text search), View site to the API docs, the license's
subscription and seats, and an audit target filter of targets that exist."""

from __future__ import annotations

import re

import pytest

from audit.models import TARGETS, AuditEntry
from tests.admin_helpers import staff, superuser_client
from tests.factories import AgentFactory, LicenseFactory, SubscriptionFactory, TeamFactory, TicketFactory
from tickets.models import Tag

pytestmark = pytest.mark.django_db


def _filter_choices(html: str, title: str) -> list[str]:
    """The choices of the changelist filter titled `title` (Django's "By <title>" details element)."""
    match = re.search(rf"<summary>\s*By {title}\s*</summary>(.*?)</details>", html, re.S)
    assert match, f"no filter {title}"
    return [
        re.sub(r"\s+", " ", c).strip() for c in re.findall(r'<a [^>]*href="[^"]*">(.*?)</a>', match.group(1))
    ]


def test_the_ticket_lists_filters_name_the_license_of_each_team_tag_and_agent():
    # given two licenses that both have a team "General" (every license does) and a tag "vip"
    acme, globex = LicenseFactory(company_name="Acme"), LicenseFactory(company_name="Globex")
    for license in (acme, globex):
        Tag.objects.create(license=license, name="vip")
        AgentFactory(license=license, name="Sam")
    html = superuser_client().get("/admin/tickets/ticket/").content.decode()
    assert {"General (Acme)", "General (Globex)"} <= set(_filter_choices(html, "teams"))
    assert {"vip (Acme)", "vip (Globex)"} <= set(_filter_choices(html, "tags"))
    assert {"Sam (Acme)", "Sam (Globex)"} <= set(_filter_choices(html, "assignment agent"))


def test_an_owners_filters_offer_only_their_licenses_teams(owner, other_license):
    html = staff(owner.agent).get("/admin/tickets/ticket/").content.decode()
    teams = _filter_choices(html, "teams")
    assert [t for t in teams if t != "-"] == [
        "All",
        f"General ({owner.agent.license.settings['companyName']})",
    ]


def test_the_ticket_list_is_compact_and_shows_priority_by_name_and_the_license(license):
    ticket = TicketFactory(license=license, subject="Printer on fire", priority=20)
    client = superuser_client()
    response = client.get("/admin/tickets/ticket/")
    head = re.search(r'<table id="result_list">.*?</thead>', response.content.decode(), re.S).group(0)
    columns = [c.lower() for c in re.findall(r'<th scope="col"[^>]*>.*?<a [^>]*>([^<]+)</a>', head, re.S)]
    assert columns == [
        "short id",
        "subject",
        "requester",
        "status",
        "priority",
        "team",
        "assignee",
        "license",
        "last message",
    ]
    row = re.search(r"<tr>.*?Printer on fire.*?</tr>", response.content.decode(), re.S).group(0)
    assert "Urgent" in row and f">{license.settings['companyName']}<" in row and ">20<" not in row
    # the priority filter and the change form name priorities too
    assert _filter_choices(response.content.decode(), "priority") == [
        "All",
        "Low",
        "Normal",
        "High",
        "Urgent",
    ]
    form = client.get(f"/admin/tickets/ticket/{ticket.pk}/change/").content.decode()
    assert '<option value="20" selected>Urgent</option>' in form


def test_the_ticket_search_finds_words_of_the_messages(license):
    # given a ticket whose subject does not say what its message does
    TicketFactory(license=license, subject="Question", text="The espresso machine leaks water")
    TicketFactory(license=license, subject="Other", text="Where is my parcel?")
    client = superuser_client()
    html = client.get("/admin/tickets/ticket/", {"q": "espresso"}).content.decode()
    assert "Question" in html and ">Other<" not in html
    # and the short ID and requester still find tickets, as the API's query does
    html = client.get("/admin/tickets/ticket/", {"q": "parcel"}).content.decode()
    assert ">Other<" in html and ">Question<" not in html


def test_view_site_leads_to_the_api_docs():
    html = superuser_client().get("/admin/").content.decode()
    assert re.search(r'<a href="/v1/docs">View site</a>', html)


def test_the_license_page_shows_its_subscription_and_seats_in_use(license):
    subscription = SubscriptionFactory(license=license, quantity=3)
    AgentFactory(license=license)
    html = superuser_client().get(f"/admin/accounts/license/{license.pk}/change/").content.decode()
    assert f"/admin/billing/subscription/{subscription.pk}/change/" in html
    assert f"{subscription.plan_code} × 3" in html
    assert "2 of 3" in html  # the owner and the agent


def test_the_audit_lists_target_filter_offers_only_targets_with_entries(owner, other_license):
    # given entries of some targets in the owner's license (license_create wrote them), and other licenses' entries
    TeamFactory(license=other_license, name="Only elsewhere")
    mine = set(AuditEntry.objects.filter(license=owner.agent.license).values_list("target", flat=True))
    html = staff(owner.agent).get("/admin/audit/auditentry/").content.decode()
    # then the filter offers those targets, not the spec's whole list
    assert len(mine) < len(TARGETS)
    assert _filter_choices(html, "target") == ["All", *sorted(mine)]
