"""RelativeDate: the spec's table, truncation in a time zone, DST, absolute values, errors, and the FilterSet path."""

import datetime
import json

import django_filters
import pytest
import time_machine
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import generics
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory

from accounts.models import Team
from helpdesk.api.relative_dates import (
    RelativeDateError,
    RelativeDateFilter,
    RelativeDateRange,
    TimezoneFilter,
    parse,
    resolve,
    zone,
)
from helpdesk.api.renderers import JSONRenderer
from tests.factories import TeamFactory

UTC = datetime.UTC


def at(*args, tz="UTC"):
    """An aware datetime given in wall time of `tz`, returned in UTC."""
    return datetime.datetime(*args, tzinfo=zone(tz)).astimezone(UTC)


NOW = at(2026, 4, 15, 13, 47, 12)


# --- the spec's table ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-2d", at(2026, 4, 13, 13, 47, 12)),
        ("+1m", at(2026, 5, 15, 13, 47, 12)),
        ("-0M", at(2026, 4, 1)),
        ("-1M", at(2026, 3, 1)),
        ("-0D", at(2026, 4, 15)),
        ("-10n", at(2026, 4, 15, 13, 37, 12)),
    ],
)
def test_the_spec_examples(value, expected):
    # given / when
    result = resolve(value, now=NOW)

    # then
    assert result == expected
    assert result.tzinfo == UTC


def test_it_reads_the_clock_when_now_is_not_given():
    # given
    with time_machine.travel(NOW, tick=False):
        # when / then
        assert resolve("-10n") == at(2026, 4, 15, 13, 37, 12)
        assert resolve("-0D") == at(2026, 4, 15)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-3h", at(2026, 4, 15, 10, 47, 12)),
        ("+3h", at(2026, 4, 15, 16, 47, 12)),
        ("-0H", at(2026, 4, 15, 13)),
        ("+0H", at(2026, 4, 15, 13)),
        ("-2H", at(2026, 4, 15, 11)),
        ("+1H", at(2026, 4, 15, 14)),
        ("+2d", at(2026, 4, 17, 13, 47, 12)),
        ("+1D", at(2026, 4, 16)),
        ("+0D", at(2026, 4, 15)),
        ("-1D", at(2026, 4, 14)),
        ("+1M", at(2026, 5, 1)),
        ("-4M", at(2025, 12, 1)),
        ("+9M", at(2027, 1, 1)),
        ("+10n", at(2026, 4, 15, 13, 57, 12)),
        ("-0n", NOW),
        ("-16m", at(2024, 12, 15, 13, 47, 12)),
    ],
)
def test_units_and_signs(value, expected):
    assert resolve(value, now=NOW) == expected


# --- months --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "value", "expected"),
    [
        (at(2026, 3, 31, 10), "-1m", at(2026, 2, 28, 10)),
        (at(2024, 3, 31, 10), "-1m", at(2024, 2, 29, 10)),  # leap year
        (at(2024, 2, 29, 10), "+12m", at(2025, 2, 28, 10)),
        (at(2024, 2, 29, 10), "-48m", at(2020, 2, 29, 10)),
        (at(2026, 1, 31, 10), "+1m", at(2026, 2, 28, 10)),
        (at(2026, 5, 31, 10), "-1m", at(2026, 4, 30, 10)),
        (at(2026, 1, 15, 10), "-1m", at(2025, 12, 15, 10)),  # year boundary
        (at(2025, 12, 15, 10), "+1m", at(2026, 1, 15, 10)),
        (at(2026, 1, 1, 0, 0, 1), "-0D", at(2026, 1, 1)),
        (at(2026, 1, 1, 0, 0, 1), "-1D", at(2025, 12, 31)),
        (at(2026, 1, 10), "-1M", at(2025, 12, 1)),
        (at(2026, 1, 10), "-13M", at(2024, 12, 1)),
        (at(2024, 3, 1, 8), "-1D", at(2024, 2, 29)),
        (at(2024, 3, 1, 8), "-1d", at(2024, 2, 29, 8)),
        (at(2024, 3, 1, 8), "-1M", at(2024, 2, 1)),
    ],
)
def test_calendar_months_days_and_year_boundaries(now, value, expected):
    assert resolve(value, now=now) == expected


# --- time zones ----------------------------------------------------------------------------------------------


def test_uppercase_units_truncate_in_the_given_time_zone():
    # given 2026-04-15 13:47:12 UTC is 15:47 in Warsaw (CEST, +2) and 09:47 in New York (EDT, -4)
    # when / then
    assert resolve("-0D", tz="Europe/Warsaw", now=NOW) == at(2026, 4, 15, tz="Europe/Warsaw")
    assert resolve("-0D", tz="Europe/Warsaw", now=NOW) == at(2026, 4, 14, 22)
    assert resolve("-0M", tz="America/New_York", now=NOW) == at(2026, 4, 1, 4)
    assert resolve("-0H", tz="Asia/Kolkata", now=NOW) == at(2026, 4, 15, 13, 30)


def test_local_midnight_can_be_another_utc_day():
    # given 23:30 UTC on Apr 30 is already May 1 in Warsaw
    now = at(2026, 4, 30, 23, 30)

    # when / then
    assert resolve("-0D", tz="Europe/Warsaw", now=now) == at(2026, 4, 30, 22)
    assert resolve("-0M", tz="Europe/Warsaw", now=now) == at(2026, 5, 1, tz="Europe/Warsaw")
    assert resolve("-0M", now=now) == at(2026, 4, 1)


def test_lowercase_units_do_not_depend_on_the_time_zone():
    for value in ("-2d", "-3h", "-10n"):
        assert resolve(value, tz="Europe/Warsaw", now=NOW) == resolve(value, tz="America/New_York", now=NOW)


def test_dst_spring_forward_in_warsaw():
    # given the day after 2026-03-29 (clocks went 02:00 -> 03:00 CET -> CEST), at 10:00 local
    now = at(2026, 3, 30, 10, tz="Europe/Warsaw")

    # when
    midnight = resolve("-0D", tz="Europe/Warsaw", now=now)
    day_before = resolve("-1D", tz="Europe/Warsaw", now=now)

    # then -1D is the local midnight before (23 hours earlier); -1d stays 24 hours
    assert midnight == at(2026, 3, 29, 22)
    assert day_before == at(2026, 3, 28, 23)
    assert midnight - day_before == datetime.timedelta(hours=23)
    assert resolve("-1d", tz="Europe/Warsaw", now=now) == now - datetime.timedelta(hours=24)
    assert resolve("-2D", tz="Europe/Warsaw", now=now) == at(2026, 3, 27, 23)


def test_dst_fall_back_in_new_york():
    # given the day after 2026-11-01 (clocks went 02:00 EDT -> 01:00 EST), at 09:00 local
    now = at(2026, 11, 2, 9, tz="America/New_York")

    # when
    midnight = resolve("-0D", tz="America/New_York", now=now)
    day_before = resolve("-1D", tz="America/New_York", now=now)

    # then the day of the change had 25 hours
    assert midnight == at(2026, 11, 2, 5)
    assert day_before == at(2026, 11, 1, 4)
    assert midnight - day_before == datetime.timedelta(hours=25)
    assert resolve("-0M", tz="America/New_York", now=now) == at(2026, 11, 1, 4)


def test_dst_hours_move_in_elapsed_time():
    # given 03:30 CEST on the night of the spring change in Warsaw: 02:00..03:00 local never existed
    now = at(2026, 3, 29, 3, 30, tz="Europe/Warsaw")

    # when / then the start of the previous hour is 01:00 CET, one real hour before 03:00 CEST
    assert resolve("-0H", tz="Europe/Warsaw", now=now) == at(2026, 3, 29, 1)
    assert resolve("-1H", tz="Europe/Warsaw", now=now) == at(2026, 3, 29, 0)


def test_a_month_move_onto_a_skipped_wall_time_lands_after_the_gap():
    # given 02:30 in Warsaw on Apr 29 2026; a month earlier (Mar 29 02:30) did not exist
    now = at(2026, 4, 29, 2, 30, tz="Europe/Warsaw")

    # when / then read with the offset before the change: 02:30 CET == 03:30 CEST
    assert resolve("-1m", tz="Europe/Warsaw", now=now) == at(2026, 3, 29, 1, 30)


# --- absolute values -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "tz", "expected"),
    [
        ("2026-04-30", "UTC", at(2026, 4, 30)),
        ("2026-04-30", "Europe/Warsaw", at(2026, 4, 29, 22)),
        ("2024-02-29", "America/New_York", at(2024, 2, 29, 5)),
        ("2026-04-30T22:02:08Z", "Europe/Warsaw", at(2026, 4, 30, 22, 2, 8)),
        ("2026-04-30T22:02:08.901Z", "UTC", at(2026, 4, 30, 22, 2, 8, 901000)),
        ("2026-04-30T22:02:08+02:00", "UTC", at(2026, 4, 30, 20, 2, 8)),
        ("2026-04-30T22:02:08-0500", "UTC", at(2026, 5, 1, 3, 2, 8)),
        ("2026-04-30T22:02:08", "Europe/Warsaw", at(2026, 4, 30, 20, 2, 8)),
        ("2026-04-30T22:02", "UTC", at(2026, 4, 30, 22, 2)),
        ("2026-04-30 22:02:08Z", "UTC", at(2026, 4, 30, 22, 2, 8)),
    ],
)
def test_absolute_dates_and_timestamps(value, tz, expected):
    assert resolve(value, tz=tz, now=NOW) == expected


# --- invalid values ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        None,
        "2d",
        "-2x",
        "-d",
        "--2d",
        "-2 d",
        "-2dd",
        "-1.5d",
        "-2D1",
        "now",
        "yesterday",
        "2026-13-01",
        "2026-02-30",
        "2026-4-1",
        "2026-04-30T25:00Z",
        "20260430",
        "-99999999999999999999d",
        "+9999999M",
        "-9999999m",
        "0001-01-01",  # fine in UTC, but must not crash anywhere
    ],
)
def test_invalid_values_are_a_clear_error(value):
    # given / when
    if value == "0001-01-01":
        with pytest.raises(RelativeDateError, match="out of range"):
            resolve(value, tz="Europe/Warsaw", now=NOW)
        return
    with pytest.raises(RelativeDateError) as error:
        resolve(value, now=NOW)

    # then
    assert str(error.value)


def test_an_error_explains_the_syntax():
    with pytest.raises(RelativeDateError, match=r"\[-\+\]<number><unit>"):
        resolve("-2x", now=NOW)


@pytest.mark.parametrize(
    "name", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", "localtime", "utc+2", "Europe/"]
)
def test_an_unknown_time_zone_is_a_clear_error(name):
    with pytest.raises(RelativeDateError, match="Unknown time zone"):
        resolve("-0D", tz=name, now=NOW)


def test_parse_checks_syntax_without_a_clock():
    # given / when
    parsed = parse("-1M")

    # then
    assert (parsed.sign, parsed.number, parsed.unit) == (-1, 1, "M")
    assert parsed.resolve(tz="Europe/Warsaw", now=NOW) == at(2026, 3, 1, tz="Europe/Warsaw")


# --- django-filter: a FilterSet and a DRF list view ----------------------------------------------------------


class TeamFilterSet(django_filters.FilterSet):
    timezone = TimezoneFilter()
    createdDate = RelativeDateRange("created_at")
    timeRange = RelativeDateRange("updated_at", suffixes=(".from", ".to"))
    createdAfter = RelativeDateFilter(field_name="created_at", lookup_expr="gt")

    class Meta:
        model = Team
        fields = []


class TeamList(generics.ListAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]
    filter_backends = [DjangoFilterBackend]
    filterset_class = TeamFilterSet
    queryset = Team.objects.order_by("created_at")

    def list(self, request, *args, **kwargs):
        return Response([team.name for team in self.filter_queryset(self.get_queryset())])


def get(params):
    request = APIRequestFactory().get("/teams", params)
    response = TeamList.as_view()(request)
    response.render()
    response.json = lambda: json.loads(response.content)
    return response


def test_it_declares_both_ends_of_a_range_in_one_line():
    assert list(TeamFilterSet.base_filters) == [
        "timezone",
        "createdAfter",
        "createdDateFrom",
        "createdDateTo",
        "timeRange.from",
        "timeRange.to",
    ]
    assert not hasattr(TeamFilterSet, "createdDate")


@pytest.fixture
def teams(license):
    # the license's default team was created "now"; these three on three local days in Warsaw
    Team.objects.filter(license=license).update(created_at=at(2020, 1, 1), updated_at=at(2020, 1, 1))
    for name, created in [
        ("two days ago", at(2026, 4, 13, 12, tz="Europe/Warsaw")),
        ("yesterday late", at(2026, 4, 14, 23, 30, tz="Europe/Warsaw")),
        ("today early", at(2026, 4, 15, 0, 30, tz="Europe/Warsaw")),
    ]:
        TeamFactory(license=license, name=name, created_at=created, updated_at=created)


@time_machine.travel(NOW, tick=False)
def test_it_filters_a_half_open_range_in_the_requested_time_zone(teams):
    # when yesterday in Warsaw
    response = get({"createdDateFrom": "-1D", "createdDateTo": "-0D", "timezone": "Europe/Warsaw"})

    # then
    assert response.status_code == 200
    assert response.json() == ["yesterday late"]


@time_machine.travel(NOW, tick=False)
def test_without_a_time_zone_uppercase_units_truncate_in_utc(teams):
    # when yesterday in UTC: 2026-04-14T00:00Z .. 2026-04-15T00:00Z; "today early" is 2026-04-14T22:30Z
    response = get({"createdDateFrom": "-1D", "createdDateTo": "-0D"})

    # then
    assert response.json() == ["yesterday late", "today early"]


@time_machine.travel(NOW, tick=False)
def test_the_lower_bound_is_inclusive_and_the_upper_exclusive(teams):
    # given the exact creation instant of "today early"
    instant = "2026-04-14T22:30:00Z"

    # when / then
    assert get({"createdDateFrom": instant}).json() == ["today early"]
    assert get({"createdDateTo": instant}).json() == ["General", "two days ago", "yesterday late"]
    assert get({"timeRange.from": "-3d", "timeRange.to": "+0n"}).json() == [
        "two days ago",
        "yesterday late",
        "today early",
    ]
    assert get({"createdAfter": instant}).json() == []


@time_machine.travel(NOW, tick=False)
@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"createdDateFrom": "2d"}, "createdDateFrom"),
        ({"createdDateTo": "-2x"}, "createdDateTo"),
        ({"createdDateTo": ""}, "createdDateTo"),
        ({"timeRange.from": "-99999999999d"}, "timeRange.from"),
        ({"timeRange.to": "+9999999M"}, "timeRange.to"),
        ({"timezone": "Mars/Olympus", "createdDateFrom": "-0D"}, "timezone"),
        ({"timezone": ""}, "timezone"),
    ],
)
def test_an_invalid_value_is_a_400_naming_the_parameter(teams, params, name):
    # when
    response = get(params)

    # then
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert list(body["details"]) == [name]
    assert body["details"][name][0]
    assert name in body["error"]
