"""The search page's SQL compiled once per shape (tickets.search_shapes): what a request binds into its shape's
SQL is what a fresh compile of the request gives, for every filter of TicketFilterSet and combinations, and the
pages are the same (issue 34)."""

import datetime

import orjson
import pytest
import time_machine
from django.db import connection
from django.http import QueryDict

from helpdesk.api import relative_dates
from tests.factories import AgentFactory, LicenseFactory, TagFactory, TeamFactory, TicketFactory
from tickets import search_shapes, selectors
from tickets.filters import TicketFilterSet
from tickets.models import Ticket

pytestmark = pytest.mark.django_db
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the shapes are PostgreSQL's; SQLite builds pages in Python"
)

# Parameters the shapes do not bind: a search naming one is compiled as before, every time.
NOT_BOUND = {"subject", "customFields", "customFieldsExist[]"}


def _world(variant: int) -> dict:
    """A license with a team, two tags, an agent and a few tickets; `variant` picks its values."""
    license = LicenseFactory(detected_languages=["en"])
    team, other_team = TeamFactory(license=license), TeamFactory(license=license)
    tag, other_tag = TagFactory(license=license), TagFactory(license=license)
    agent = AgentFactory(license=license)
    parent = TicketFactory(license=license)
    TicketFactory(license=license, teams=[team], priority=0)
    TicketFactory(license=license, tags=[tag, other_tag], priority=10)
    TicketFactory(license=license, followers=[agent], priority=20)
    TicketFactory(
        license=license, parent=parent, assignment_team=team, assignment_agent=agent, status="pending"
    )
    short_id = TicketFactory(license=license, rating_score="good").short_id
    first = Ticket.objects.filter(license=license).order_by("-created_at", "-pk").first()
    return {
        "license": license,
        "team": str(team.pk),
        "other_team": str(other_team.pk),
        "tag": str(tag.pk),
        "other_tag": str(other_tag.pk),
        "agent": str(agent.pk),
        "parent": str(parent.pk),
        "short_id": short_id,
        "cursor_id": str(first.pk),
        "cursor_value": first.created_at,
        "variant": variant,
    }


def _cases(w: dict) -> list[dict]:
    """Searches covering every bound filter of TicketFilterSet, alone and together, and each kind of page."""
    v = w["variant"]
    ms = (
        w["cursor_value"]
        .astimezone(datetime.UTC)
        .replace(microsecond=w["cursor_value"].microsecond // 1000 * 1000)
    )
    moments = [f"{name}={['-30d', '-2D'][v]}" for name, how in search_shapes.HOW.items() if how == "moment"]
    return [
        {},
        {"status": ["open", "pending"][v]},
        {"status": "solved", "silo": "spam"},
        {"spam": ["true", "false"][v]},
        {"silo": ["tickets", "archive"][v]},
        {"hasAssignee": "Y"},
        {"hasAssignee": "N", "hasParent": "Y", "hasTags": "N"},
        {"hasTags": "Y", "slaBreached": "N"},
        {"slaBreached": "Y"},
        {"shortID": w["short_id"]},
        {"query": ["payment", "refund delayed"][v]},
        {"query": "   "},
        {"parentTicketID": w["parent"]},
        {"follower": w["agent"]},
        {"rating": "none"},
        {"rating": "rated"},
        {"rating": ["good", "bad"][v]},
        {"priority": ["0", "20"][v]},
        {"priority": ["-10", "10"][v], "priorityOp": "gte"},
        {"priority": "10", "priorityOp": "lt"},
        {"eventsScope": "all"},
        {"teamIDs[]": [w["team"]]},
        {"teamIDs[]": [w["team"], w["other_team"]]},
        {"tagIDs[]": [w["tag"]]},
        {"tagIDs[]": [w["tag"], w["other_tag"]]},
        {"language[]": [["en"], ["de"]][v]},
        {"language[]": ["pl", "es"]},
        {"assignment.teamID": w["team"]},
        {"assignment.teamID": "none"},
        {"assignment.agentID": w["agent"], "assignment.teamID": w["team"]},
        {"assignment.agentID": "none"},
        *[dict([moment.split("=")]) for moment in moments],
        {"createdDateFrom": "-1D", "createdDateTo": "-0D", "timezone": ["Europe/Warsaw", "UTC"][v]},
        {"updatedDateFrom": "-1m", "timezone": "America/New_York"},
        # absolute dates do not move with the clock: each request's own are bound, not the first's
        {"createdDateFrom": ["2026-04-01", "2026-03-01"][v]},
        {
            "slaDueFrom": ["2026-01-12T13:59:00Z", "2025-02-03T04:05:06Z"][v],
            "slaDueTo": ["2026-01-12T14:01:00Z", "2025-02-04T00:00:00+01:00"][v],
        },
        # paging
        {"page": "2"},
        {"pageSize": ["5", "7"][v]},
        {"order": "asc", "sortBy": "updatedAt"},
        {"sortBy": "lastMessageAt", "status": "open"},
        {"next.value": w["cursor_value"].isoformat(), "next.ID": w["cursor_id"]},
        {"prev.value": w["cursor_value"].isoformat(), "prev.ID": w["cursor_id"], "order": "asc"},
        {"next.value": ms.isoformat(), "next.ID": w["cursor_id"]},  # refined: a subquery
        # together
        {
            "status": "pending",
            "teamIDs[]": [w["team"]],
            "tagIDs[]": [w["tag"]],
            "hasAssignee": "Y",
            "priority": "10",
            "createdDateFrom": "-30d",
            "lastMessageTo": "-0D",
            "language[]": ["en"],
            "query": "payment",
            "sortBy": "updatedAt",
            "next.value": w["cursor_value"].isoformat(),
            "next.ID": w["cursor_id"],
        },
        {"follower": w["agent"], "parentTicketID": w["parent"], "rating": "none", "shortID": w["short_id"]},
    ]


def _query_dict(case: dict) -> QueryDict:
    query = QueryDict(mutable=True)
    for name, value in case.items():
        query.setlist(name, value if isinstance(value, list) else [value])
    return query


def _fresh(license, case: dict) -> tuple:
    """The keys' SQL as the ORM compiles it for this request (what the search ran before the shapes)."""
    filterset, paginator = selectors.ticket_filterset(license, _query_dict(case))
    return search_shapes._compiled(filterset, paginator)


def _bound(license, case: dict) -> tuple:
    filterset, paginator = selectors.ticket_filterset(license, _query_dict(case))
    return search_shapes.keys_sql(license, filterset, paginator)


def _key(license, case: dict) -> tuple:
    filterset, paginator = selectors.ticket_filterset(license, _query_dict(case))
    return search_shapes._Request(license, filterset.form.cleaned_data, None, paginator).key


def _page(license, case: dict) -> tuple:
    search = selectors.ticket_search(license, _query_dict(case))
    return orjson.dumps(search.documents), search.total, search.paginator.has_next, search.paginator.has_prev


@postgresql_only
def test_it_binds_what_a_fresh_compile_gives_for_every_filter_and_page():
    # given: two licenses whose searches have the same shapes and other values, at two readings of the clock
    search_shapes.clear()
    first, second = _world(0), _world(1)
    first_cases, second_cases = _cases(first), _cases(second)
    not_learned = []
    # when: the first license's searches teach the shapes
    with time_machine.travel(datetime.datetime(2026, 5, 1, 10, tzinfo=datetime.UTC), tick=False):
        for case in first_cases:
            _bound(first["license"], case)
            if _key(first["license"], case) not in search_shapes._shapes:
                not_learned.append(case)
    # then: the second license's, bound into them, are what the ORM compiles for them
    with time_machine.travel(datetime.datetime(2026, 6, 2, 11, 30, tzinfo=datetime.UTC), tick=False):
        for case in second_cases:
            assert _bound(second["license"], case) == _fresh(second["license"], case), case
    assert not_learned == []  # every shape's bindings were proven, and remembered


@postgresql_only
def test_every_case_is_served_from_its_shape_with_the_same_page():
    # given
    search_shapes.clear()
    first, second = _world(0), _world(1)
    with time_machine.travel(datetime.datetime(2026, 5, 1, 10, tzinfo=datetime.UTC), tick=False):
        for case in _cases(first):
            _bound(first["license"], case)
    with time_machine.travel(datetime.datetime(2026, 6, 2, 11, 30, tzinfo=datetime.UTC), tick=False):
        for case in _cases(second):
            # when: the page through its shape, then the page compiled as before (no shape remembered)
            bound = _page(second["license"], case)
            saved = dict(search_shapes._shapes)
            search_shapes.clear()
            fresh = _page(second["license"], case)
            search_shapes._shapes.update(saved)
            # then
            assert bound == fresh, case


@postgresql_only
def test_a_shapes_total_has_the_digest_of_the_filters_run():
    # given: the shape of a full-text search with a relative date is remembered
    search_shapes.clear()
    world = _world(0)
    case = {"query": "payment", "createdDateFrom": "-30d", "teamIDs[]": [world["team"]]}
    _bound(world["license"], case)
    # when: a search of that shape is bound, and the same search runs its filters
    filterset, paginator = selectors.ticket_filterset(world["license"], _query_dict(case))
    with time_machine.travel(datetime.datetime(2026, 5, 1, 10, tzinfo=datetime.UTC), tick=False):
        search_shapes.keys_sql(world["license"], filterset, paginator)
        bound_digest = filterset.count_digest()
        fresh, _ = selectors.ticket_filterset(world["license"], _query_dict(case))
        fresh_digest = fresh.count_digest()
    # then
    assert filterset.recorded and "_qs" not in filterset.__dict__  # no queryset was built
    assert bound_digest == fresh_digest


@postgresql_only
def test_the_license_languages_are_in_a_full_text_shape():
    # given
    search_shapes.clear()
    world = _world(0)
    license = world["license"]
    _bound(license, {"query": "payments"})
    # when
    license.detected_languages = ["de", "fr"]
    bound = _bound(license, {"query": "payments"})
    # then
    assert bound == _fresh(license, {"query": "payments"})
    assert len(search_shapes._shapes) == 2


@postgresql_only
def test_it_keeps_the_most_recently_used_shapes(monkeypatch):
    # given
    search_shapes.clear()
    monkeypatch.setattr(search_shapes, "MAX_SHAPES", 2)
    license = _world(0)["license"]
    # when
    for case in ({"status": "open"}, {"hasTags": "Y"}, {"status": "pending"}, {"rating": "none"}):
        _bound(license, case)
    # then: "status" was used last but one, "hasTags" went first
    keys = list(search_shapes._shapes)
    assert len(keys) == 2
    assert any("status" in key for key in keys[0]) and any(
        isinstance(part, tuple) and part[0] == "rating" for part in keys[1]
    )


@postgresql_only
def test_a_parameter_it_does_not_bind_is_compiled_each_time():
    # given
    search_shapes.clear()
    license = _world(0)["license"]
    # when
    bound = _bound(license, {"subject": "printer", "status": "open"})
    # then
    assert bound == _fresh(license, {"subject": "printer", "status": "open"})
    assert not search_shapes._shapes


def test_every_filter_of_the_filterset_is_classified():
    # given
    names = set(TicketFilterSet.base_filters)
    # then: each filter is either bound (with a known way) or compiled each time
    assert names == set(search_shapes.HOW) | NOT_BOUND
    assert not set(search_shapes.HOW) & NOT_BOUND
    moments = {
        name
        for name, f in TicketFilterSet.base_filters.items()
        if isinstance(f, relative_dates.RelativeDateFilter)
    }
    assert {name for name, how in search_shapes.HOW.items() if how == search_shapes.MOMENT} == moments


@pytest.mark.skipif(connection.vendor == "postgresql", reason="the other backends' path")
def test_other_databases_compile_as_before():
    # given
    search_shapes.clear()
    license = _world(0)["license"]
    # when
    bound = _bound(license, {"status": "open"})
    # then
    assert bound == _fresh(license, {"status": "open"})
    assert not search_shapes._shapes
