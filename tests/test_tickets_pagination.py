"""Ticket search pages: cursor walks over identical timestamps, totals, cached counts, constant query counts."""

import datetime
from urllib.parse import parse_qs, urlparse

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import ROLE_NORMAL
from tests.factories import AgentFactory, TagFactory, TeamFactory, TicketFactory
from tickets.models import Ticket

SAME = datetime.datetime(2026, 2, 1, 9, 30, 15, 123456, tzinfo=datetime.UTC)


@pytest.fixture
def tied(owner):
    """Twelve open tickets; ten share one createdAt, so only the ID orders them."""
    tickets = [TicketFactory(license=owner.license, created_at=SAME) for _ in range(10)]
    tickets.append(TicketFactory(license=owner.license, created_at=SAME + datetime.timedelta(seconds=1)))
    tickets.append(TicketFactory(license=owner.license, created_at=SAME - datetime.timedelta(seconds=1)))
    return tickets


def _expected_order(tickets, descending=True):
    return [str(t.pk) for t in sorted(tickets, key=lambda t: (t.created_at, str(t.pk)), reverse=descending)]


def _link(response, rel):
    for part in response.get("Link", "").split(","):
        if f'rel="{rel}"' in part:
            url = part.split(";")[0].strip().strip("<>")
            return {key: values for key, values in parse_qs(urlparse(url).query).items()}
    return None


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_a_cursor_walk_forwards_then_backwards_returns_every_ticket_once(owner, tied, order):
    # given
    for ticket in tied:
        ticket.refresh_from_db()
    expected = _expected_order(tied, descending=order == "desc")
    # when walking forwards with the Link header's next cursors, three at a time
    seen, pages, params = [], [], {"pageSize": 3, "order": order}
    while True:
        response = owner.client.get("/v1/tickets", params)
        assert response.status_code == 200
        assert response["X-Total-Results"] == "12" and response["X-Total-Pages"] == "4"
        page = [t["ID"] for t in response.json()]
        seen += page
        pages.append(page)
        params = _link(response, "next")
        if params is None:
            break
    # then
    assert seen == expected
    # and when walking back from the last page with prev cursors built by hand from the rendered items
    back, first = [], response.json()[0]
    while True:
        response = owner.client.get(
            "/v1/tickets",
            {"pageSize": 3, "order": order, "prev.value": first["createdAt"], "prev.ID": first["ID"]},
        )
        page = [t["ID"] for t in response.json()]
        if not page:
            break
        back = page + back
        first = response.json()[0]
    assert back == expected[:-3]


def test_page_numbers_and_totals(owner, tied):
    # when
    pages = [owner.client.get("/v1/tickets", {"pageSize": 5, "page": n}) for n in (1, 2, 3, 4)]
    # then
    ids = [t["ID"] for response in pages for t in response.json()]
    for ticket in tied:
        ticket.refresh_from_db()
    assert ids == _expected_order(tied)
    assert [len(r.json()) for r in pages] == [5, 5, 2, 0]
    assert all(r["X-Total-Results"] == "12" and r["X-Total-Pages"] == "3" for r in pages)


@pytest.mark.parametrize("sort_by", ["createdAt", "updatedAt", "lastMessageAt"])
def test_every_sort_field_walks_completely(owner, tied, sort_by):
    seen, params = [], {"pageSize": 5, "sortBy": sort_by, "order": "asc"}
    while params is not None:
        response = owner.client.get("/v1/tickets", params)
        seen += [t["ID"] for t in response.json()]
        params = _link(response, "next")
    assert sorted(seen) == sorted(str(t.pk) for t in tied) and len(seen) == 12


def test_a_cached_total_changes_with_any_write_to_the_license(owner, tied, outsider):
    # given a first count (cached)
    assert owner.client.get("/v1/tickets")["X-Total-Results"] == "12"
    # when a ticket is written through the API, and another closed by a service
    owner.client.post(
        "/v1/tickets",
        {"subject": "new", "requester": {"email": "a@example.com"}, "message": {"text": "hello"}},
        format="json",
    )
    owner.client.delete(f"/v1/tickets/{tied[0].pk}")
    # then the total is exact at once
    assert owner.client.get("/v1/tickets")["X-Total-Results"] == "12"
    assert owner.client.get("/v1/tickets", {"silo": "trash"})["X-Total-Results"] == "1"
    # and another license's writes do not matter
    assert outsider.client.get("/v1/tickets")["X-Total-Results"] == "0"


def test_a_repeated_search_serves_its_total_from_the_cache(owner, tied):
    # given
    owner.client.get("/v1/tickets", {"pageSize": 5})
    # when
    with CaptureQueriesContext(connection) as queries:
        response = owner.client.get("/v1/tickets", {"pageSize": 5})
    # then
    assert response["X-Total-Results"] == "12"
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)


def _rich_tickets(license, n):
    team, tag = TeamFactory(license=license), TagFactory(license=license)
    follower = AgentFactory(license=license, roles=[ROLE_NORMAL])
    parent = TicketFactory(
        license=license,
        teams=[team],
        tags=[tag],
        followers=[follower],
        assignment={"team": team, "agent": follower},
    )
    for _ in range(n):
        child = TicketFactory(
            license=license,
            teams=[team],
            tags=[tag],
            followers=[follower],
            assignment={"team": team, "agent": follower},
        )
        Ticket.objects.filter(pk=child.pk).update(parent=parent)
    return team, tag, follower


@pytest.mark.parametrize("size", [2, 20])
def test_a_list_costs_the_same_queries_whatever_the_page_size(owner, django_assert_num_queries, size):
    # given tickets with teams, tags, followers, assignment, parent and children
    _rich_tickets(owner.license, size)
    owner.client.get("/v1/tickets", {"pageSize": size})  # warm the count cache
    # then: the caller (token and membership in one query) and the page: on PostgreSQL one statement that
    # builds the documents; elsewhere the page's rows and one UNION query for the related IDs
    with django_assert_num_queries(2 if connection.vendor == "postgresql" else 3):
        response = owner.client.get("/v1/tickets", {"pageSize": size})
    assert len(response.json()) == size
    assert all(t["teamIDs"] and t["tagIDs"] and t["followers"] for t in response.json())


def test_id_filters_are_looked_up_in_one_query_before_the_search(owner, django_assert_num_queries):
    # given tickets of a team, with a tag, a follower and an assignee
    team, tag, follower = _rich_tickets(owner.license, 3)
    params = {
        "teamIDs[]": [str(team.pk)],
        "assignment.teamID": str(team.pk),
        "assignment.agentID": str(follower.pk),
        "tagIDs[]": [str(tag.pk)],
        "follower": str(follower.pk),
    }
    owner.client.get("/v1/tickets", params)  # warm the count cache
    # then: the caller, one query for the teams, tags and agents named, and the page (as with no filter)
    with django_assert_num_queries(3 if connection.vendor == "postgresql" else 4):
        response = owner.client.get("/v1/tickets", params)
    assert response["X-Total-Results"] == "4"


def test_id_filters_that_match_nothing_cost_the_same_queries(owner, django_assert_num_queries):
    # given a team and a tag of the license that no ticket has
    _rich_tickets(owner.license, 3)
    team, tag = TeamFactory(license=owner.license), TagFactory(license=owner.license)
    params = {"teamIDs[]": [str(team.pk)], "assignment.teamID": str(team.pk), "tagIDs[]": [str(tag.pk)]}
    owner.client.get("/v1/tickets", params)
    # then: the caller, the teams and tags looked up, the (empty) page
    with django_assert_num_queries(3):
        response = owner.client.get("/v1/tickets", params)
    assert response.status_code == 200
    assert response["X-Total-Results"] == "0"


def test_an_unknown_id_is_a_400_before_the_search_runs(owner, other_license, django_assert_num_queries):
    # given a team of another license
    foreign = TeamFactory(license=other_license)
    owner.client.get("/v1/tickets")  # the token's first use is recorded once
    # then: the caller and the look-up, no page and no count
    with django_assert_num_queries(2):
        response = owner.client.get(
            "/v1/tickets", {"teamIDs[]": [str(foreign.pk)], "tagIDs[]": [str(foreign.pk)]}
        )
    assert response.status_code == 400
    assert set(response.json()["details"]) == {"teamIDs[]"}


def test_the_total_is_counted_without_the_output_joins(owner, tied):
    # when
    with CaptureQueriesContext(connection) as queries:
        owner.client.get("/v1/tickets")
    # then the count reads the tickets table alone
    [count] = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert "JOIN" not in count.upper()
