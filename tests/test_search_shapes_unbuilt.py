"""A search whose shape is remembered builds no FilterSet (tickets.selectors._search_postgresql, issue 34): its
page, total, cursors and total's digest are those of the search as it ran before (the FilterSet built, its SQL
bound or compiled), and every invalid value gets the same 400."""

import datetime
import uuid

import orjson
import pytest
import time_machine
from django.core.cache import cache
from django.db import connection
from rest_framework.exceptions import ValidationError

from tests.test_search_shapes import _cases, _query_dict, _world
from tickets import search_shapes, selectors, totals
from tickets.filters import TicketFilterSet, count_digest
from tickets.models import Ticket
from tickets.output import ticket_page_from_keys

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the shapes are PostgreSQL's"),
]
LEARNED_AT = datetime.datetime(2026, 5, 1, 10, tzinfo=datetime.UTC)
SEARCHED_AT = datetime.datetime(2026, 6, 2, 11, 30, tzinfo=datetime.UTC)


def _before(license, query) -> tuple:
    """The search as it ran before: the FilterSet built, then its keys (tickets.search_shapes.keys_sql) and its
    total (tickets.selectors.ticket_count)."""
    filterset, paginator = selectors.ticket_filterset(license, query)
    keys = search_shapes.keys_sql(license, filterset, paginator)
    events = filterset.form.cleaned_data["eventsScope"] == "all"
    rows = ticket_page_from_keys(*keys, paginator.sort_field, events=events, license_id=license.pk)
    items = paginator.page_rows(rows, Ticket)
    total = selectors.ticket_count(license, filterset)
    return _outcome([item["doc"] for item in items], total, paginator)


def _outcome(documents, total, paginator) -> tuple:
    keys = [(item["id"], item[paginator.sort_field]) for item in paginator.items]  # the cursors' values
    return orjson.dumps(documents), total, paginator.has_next, paginator.has_prev, keys


def _search(license, query) -> tuple:
    search = selectors.ticket_search(license, query)
    return _outcome(search.documents, search.total, search.paginator)


@pytest.fixture
def built(monkeypatch):
    """How many FilterSets were built."""
    count = []
    original = TicketFilterSet.__init__

    def counting(self, *args, **kwargs):
        count.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(TicketFilterSet, "__init__", counting)
    return count


def test_a_remembered_shape_gives_the_search_of_before_without_a_filterset(built):
    # given: the first license's searches teach the shapes
    search_shapes.clear()
    first, second = _world(0), _world(1)
    with time_machine.travel(LEARNED_AT, tick=False):
        for case in _cases(first):
            selectors.ticket_search(first["license"], _query_dict(case))
    license = second["license"]
    with time_machine.travel(SEARCHED_AT, tick=False):
        for case in _cases(second):
            query = _query_dict(case)
            cache.clear()
            # when: the search's total is counted (a miss builds the FilterSet), then served
            counted = _search(license, query)
            built.clear()
            served = _search(license, query)
            nothing_built = not built
            # and the search as before, its shapes forgotten (compiled) and its total counted again
            saved = dict(search_shapes._shapes)
            search_shapes.clear()
            cache.clear()
            before = _before(license, query)
            search_shapes._shapes.update(saved)
            # then
            assert nothing_built, case
            assert counted == served == before, case


def test_the_total_digest_is_the_filtersets():
    # given
    search_shapes.clear()
    world = _world(0)
    license = world["license"]
    with time_machine.travel(SEARCHED_AT, tick=False):
        for case in _cases(world):
            query = _query_dict(case)
            # when: the digest from the cleaned values, and the FilterSet's after its filters ran
            filterset, _ = selectors.ticket_filterset(license, query)
            data = filterset.form.cleaned_data
            now = datetime.datetime.now(datetime.UTC)
            unbuilt = count_digest(data, now, search_shapes.recorded_parts(license, data))
            filterset._relative_dates_now = now
            # then
            assert unbuilt == filterset.count_digest(), case


def _invalid_cases(w: dict) -> list[tuple[dict, dict]]:
    """(a valid search whose shape is learned, the same shape with an invalid value)."""
    cursor = {"next.value": w["cursor_value"].isoformat(), "next.ID": w["cursor_id"]}
    return [
        ({"status": "open"}, {"status": "opened"}),
        ({"status": "open"}, {"status": ""}),
        ({"hasTags": "Y"}, {"hasTags": "yes"}),
        ({"priority": "10"}, {"priority": "11"}),
        ({"teamIDs[]": [w["team"]]}, {"teamIDs[]": ["not-a-uuid"]}),
        ({"teamIDs[]": [w["team"]]}, {"teamIDs[]": [str(uuid.uuid4())]}),  # not the license's
        ({"tagIDs[]": [w["tag"]]}, {"tagIDs[]": [str(uuid.uuid4())]}),
        ({"assignment.agentID": w["agent"]}, {"assignment.agentID": str(uuid.uuid4())}),
        ({"language[]": ["en"]}, {"language[]": ["xx"]}),
        ({"createdDateFrom": "-30d"}, {"createdDateFrom": "-30x"}),
        ({"createdDateFrom": "-30d"}, {"createdDateFrom": "-999999999d"}),  # out of range when resolved
        ({"createdDateFrom": "-30d"}, {"createdDateFrom": "-30d", "timezone": "Mars/Olympus"}),
        ({"pageSize": "5"}, {"pageSize": "101"}),
        ({"page": "2"}, {"page": "0"}),
        ({"sortBy": "updatedAt"}, {"sortBy": "closedAt"}),
        (cursor, {**cursor, "next.ID": "not-an-id"}),
        (cursor, {**cursor, "next.value": "yesterday"}),
        (cursor, {"next.value": cursor["next.value"]}),
        (cursor, {**cursor, "page": "3"}),
        ({"status": "open"}, {"status": "open", "statuses": "open"}),
        ({"teamIDs[]": [w["team"]]}, {"teamIDs": w["team"]}),
    ]


def _error(search, license, query):
    with pytest.raises(ValidationError) as raised:
        search(license, query)
    return raised.value.detail


def test_an_invalid_value_gets_the_same_400_with_its_shape_remembered():
    # given
    search_shapes.clear()
    world = _world(0)
    license = world["license"]
    for valid, invalid in _invalid_cases(world):
        selectors.ticket_search(license, _query_dict(valid))
        assert search_shapes._shapes, valid
        # when
        error = _error(selectors.ticket_search, license, _query_dict(invalid))
        saved = dict(search_shapes._shapes)
        search_shapes.clear()
        before = _error(_before, license, _query_dict(invalid))
        search_shapes._shapes.update(saved)
        # then
        assert error == before, invalid


def test_a_remembered_count_binds_what_a_fresh_compile_gives():
    # given: the first license's totals teach the counts' shapes
    search_shapes.clear()
    first, second = _world(0), _world(1)
    with time_machine.travel(LEARNED_AT, tick=False):
        for case in _cases(first):
            filterset, _ = selectors.ticket_filterset(first["license"], _query_dict(case))
            now = datetime.datetime.now(datetime.UTC)
            search_shapes.count_sql(first["license"], filterset.form.cleaned_data, now)
    learned = sum(1 for key in search_shapes._shapes if key[-1] == "count")
    license = second["license"]
    with time_machine.travel(SEARCHED_AT, tick=False):
        for case in _cases(second):
            # when: the second license's, bound into them, and as the FilterSet compiles them
            filterset, _ = selectors.ticket_filterset(license, _query_dict(case))
            now = datetime.datetime.now(datetime.UTC)
            bound = search_shapes.count_sql(license, filterset.form.cleaned_data, now)
            filterset._relative_dates_now = now
            fresh = totals.count_sql(filterset.count_queryset(filterset.qs))
            # then
            assert bound == fresh, case
    assert learned >= 20  # (the paging cases share the plain search's count)
