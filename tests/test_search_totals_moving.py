"""A search whose bound moves with the clock (`createdDateFrom=-30d`: a new moment each microsecond) has its total
counted and not cached: no later search shares it (issue 34). The count is exact, as a miss's was."""

import datetime

import pytest
import time_machine

from helpdesk.api import relative_dates
from tests.factories import TicketFactory
from tickets.totals import reading

pytestmark = pytest.mark.django_db
NOW = datetime.datetime(2026, 5, 1, 10, tzinfo=datetime.UTC)


@pytest.fixture
def cache_calls(monkeypatch):
    """The totals' cache calls."""
    calls = []

    class Recording:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(reading.__dict__["_cache"], name)

    monkeypatch.setitem(reading.__dict__, "_cache", reading.cache)
    monkeypatch.setattr(reading, "cache", Recording())
    return calls


@pytest.mark.parametrize(
    ("text", "moves"),
    [("-30d", True), ("-2h", True), ("-10n", True), ("-1m", True), ("-0D", False), ("-1H", False),
     ("-0M", False), ("2026-04-01", False), ("2026-04-01T10:00:00Z", False)],
)  # fmt: skip
def test_which_dates_move_with_the_clock(text, moves):
    assert relative_dates.parse(text).moves_with_the_clock is moves


def test_a_moving_bound_is_counted_exactly_and_not_cached(owner, cache_calls):
    # given: tickets 10, 29 and 31 days old
    for days in (10, 29, 31):
        TicketFactory(license=owner.license, created_at=NOW - datetime.timedelta(days=days))
    with time_machine.travel(NOW, tick=False):
        owner.client.get("/v1/tickets")  # the caller kept, the plain search's total cached
        cache_calls.clear()
        # when
        response = owner.client.get("/v1/tickets?createdDateFrom=-30d")
    # then
    assert response.status_code == 200
    assert response["X-Total-Results"] == "2"
    assert cache_calls == []


def test_a_truncated_bound_is_still_cached(owner, cache_calls):
    # given
    TicketFactory(license=owner.license, created_at=NOW - datetime.timedelta(hours=1))
    with time_machine.travel(NOW, tick=False):
        # when
        first = owner.client.get("/v1/tickets?createdDateFrom=-0D")
        second = owner.client.get("/v1/tickets?createdDateFrom=-0D")
    # then: counted once, then read from the cache
    assert first["X-Total-Results"] == second["X-Total-Results"] == "1"
    assert "set_many" in cache_calls and cache_calls.count("get") >= 2
