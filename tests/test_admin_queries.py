"""List pages run a constant number of queries: as many for one row as for many."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import services
from accounts.models import Account
from audit.models import AuditEntry
from billing.models import Charge
from tests.factories import AgentFactory, LicenseFactory, SubscriptionFactory, TeamFactory, TemplateFactory

PAGES = [
    "/admin/accounts/license/",
    "/admin/accounts/agent/",
    "/admin/accounts/team/",
    "/admin/accounts/account/",
    "/admin/accounts/personalaccesstoken/",
    "/admin/templates_app/template/",
    "/admin/billing/subscription/",
    "/admin/billing/charge/",
    "/admin/audit/auditentry/",
]


def _more_rows(license, n):
    """n more rows of every listed kind in `license` (and n more licenses)."""
    for i in range(n):
        LicenseFactory()
        team = TeamFactory(license=license)
        agent = AgentFactory(license=license)
        agent.teams.add(team, license.default_team)
        TemplateFactory(license=license)
        services.token_issue(account=agent.account, name=f"t{i}")
        subscription = SubscriptionFactory(license=license)
        Charge.objects.create(
            license=license, subscription=subscription, amount=100, currency="USD", reason="create",
            idempotency_key=f"q-{uuid.uuid4()}", status="succeeded",
        )  # fmt: skip


def _count(client, url) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


# Accounts and tokens are identities, not license data; charges the ledger's machinery: only superusers list them.
SUPERUSER_ONLY = (
    "/admin/accounts/account/",
    "/admin/accounts/personalaccesstoken/",
    "/admin/billing/charge/",
)


@pytest.mark.parametrize(
    ("who", "url"),
    [("superuser", url) for url in PAGES]
    + [("staff_owner", url) for url in PAGES if url not in SUPERUSER_ONLY],
)
def test_a_list_page_runs_as_many_queries_for_many_rows_as_for_one(
    request, who, url, license, django_assert_max_num_queries
):
    # given one row of each kind
    client = request.getfixturevalue(who)
    _more_rows(license, 1)
    few = _count(client, url)
    # when there are many (five of each: a query per row shows as four more queries)
    _more_rows(license, 4)
    assert AuditEntry.objects.filter(license=license).count() > 20 and Account.objects.count() > 10
    # then the page runs no more queries
    with django_assert_max_num_queries(few):
        assert client.get(url).status_code == 200


def _tickets(license, agent, n):
    from tests.factories import TagFactory, TicketFactory

    for i in range(n):
        tag = TagFactory(license=license, name=f"q{uuid.uuid4().hex[:8]}")
        TicketFactory(
            license=license,
            tags=[tag],
            assignment={"agent": agent} if i % 2 else None,
            subject=f"Printer {i}",
        )


@pytest.mark.parametrize("page", ["mine", "all", "view"])
def test_a_normal_agents_ticket_list_with_its_views_runs_as_many_queries_for_many_tickets(
    page, license, agent, django_assert_max_num_queries
):
    # given a normal agent signed in, the license's shared views and its own private one, and a few tickets
    from tests.admin_helpers import signed_in
    from tickets.saved_views.services import view_create

    shared = view_create(license=license, author=None, name="Open", filters={"status": "open"})
    view_create(license=license, author=agent.agent, agent_id=agent.agent.pk, name="Mine", filters={})
    client = signed_in(agent.account)
    url = "/admin/tickets/ticket/" + {"mine": "", "all": "?view=all", "view": f"?view={shared.pk}"}[page]
    _tickets(license, agent.agent, 2)
    few = _count(client, url)
    # when the license has many more tickets (six times as many: a query per row shows as ten more)
    _tickets(license, agent.agent, 10)
    # then the page (its rows and the sidebar's exact counts) runs no more queries
    with django_assert_max_num_queries(few):
        response = client.get(url)
    assert response.status_code == 200
    assert b"My open tickets" in response.content and b"Open (" in response.content
