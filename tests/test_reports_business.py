"""The time reports in business hours (`clock=business`): hand-computed first responses and resolutions under
Mon-Fri 09:00-17:00 Europe/Warsaw hours across a weekend and the spring DST change, a 24/7 policy equal to the
calendar, a ticket without a policy left out, CSV, bad input, and the rollups equal to the rows and to a recount."""

from __future__ import annotations

import importlib
import itertools

import pytest
import time_machine
from django.apps import apps as django_apps
from django.db import connection
from django.http import QueryDict

from helpdesk.roles import ROLE_NORMAL
from tests.factories import AgentFactory, TeamFactory
from tests.test_reports import (
    assert_rollups_recount,
    at,
    bad,
    client_at,
    reply_at,
    report,
    ticket_at,
    update_at,
)
from tickets import services
from tickets.reports.models import ReportRollup, TicketMetrics, TicketResolution
from tickets.reports.registry import REPORTS
from tickets.sla import services as sla_services

MARCH = {"from": "2026-03-01", "to": "2026-04-01", "timezone": "Europe/Warsaw", "interval": "month"}
OFFICE = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
TARGETS = {str(p): {"firstResponseMinutes": 60, "resolutionMinutes": 480} for p in (0, 20)}


def time_reports() -> list[str]:
    names = sorted(name for name in REPORTS if name.startswith(("responseTime", "resolutionTime")))
    assert len(names) == 8  # the reports are registered (tickets.reports.definitions)
    return names


def _priority(value):
    return [{"type": "priority", "op": "is", "value": value}]


@pytest.fixture
def business(owner):
    """Four tickets of March 2026 (times UTC; Warsaw is UTC+1, UTC+2 from Sunday 29 March):

    W, office hours (priority 0): the client writes Friday 6 March 15:00 (16:00 in Warsaw), X answers Monday
    9 March 09:30 (10:30): 239,400 s, in business hours Friday 16-17 and Monday 09-10:30 = 9,000 s; solved
    Monday 15:00 (16:00): 259,200 s, business 1 h + 7 h = 28,800 s.
    D, office hours, across the DST change: the client writes Thursday 26 March 15:00 (16:00 CET), X answers
    Monday 30 March 08:00 (10:00 CEST): 320,400 s, business Thursday 1 h + Friday 8 h + Monday 1 h = 36,000 s;
    solved Tuesday 31 March 08:00 (10:00 CEST): 406,800 s, business 1 + 8 + 8 + 1 h = 64,800 s.
    R, a 24/7 policy (priority 20): 9 March 10:00, Y answers 10:20 (1,200 s), solved 12:00 (7,200 s).
    N, no policy (priority 10): 9 March 11:00, X answers 11:30 (1,800 s), solved 12:30 (5,400 s)."""
    x = owner.agent
    y = AgentFactory(license=owner.license, roles=[ROLE_NORMAL])
    team = TeamFactory(license=owner.license)
    hours = sla_services.business_hours_create(
        license=owner.license, name="Warsaw", timezone="Europe/Warsaw", week=OFFICE
    )
    sla_services.sla_policy_create(
        license=owner.license,
        name="Office",
        targets=TARGETS,
        business_hours_id=hours.pk,
        conditions=_priority(0),
    )
    sla_services.sla_policy_create(
        license=owner.license, name="Round the clock", targets=TARGETS, conditions=_priority(20), ordering=1
    )
    w = ticket_at("2026-03-06T15:00", license=owner.license, assignment={"agent": x, "team": team})
    reply_at("2026-03-09T09:30", w, x)
    update_at("2026-03-09T15:00", w, status="solved", force=True)
    d = ticket_at("2026-03-26T15:00", license=owner.license, assignment={"agent": x})
    reply_at("2026-03-30T08:00", d, x)
    update_at("2026-03-31T08:00", d, status="solved", force=True)
    r = ticket_at("2026-03-09T10:00", license=owner.license, assignment={"agent": y})
    update_at("2026-03-09T10:00", r, priority=20)
    reply_at("2026-03-09T10:20", r, y)
    update_at("2026-03-09T12:00", r, status="solved", force=True)
    n = ticket_at("2026-03-09T11:00", license=owner.license, assignment={"agent": x})
    update_at("2026-03-09T11:00", n, priority=10)
    reply_at("2026-03-09T11:30", n, x)
    update_at("2026-03-09T12:30", n, status="solved", force=True)
    return {"x": x, "y": y, "team": team, "tickets": (w, d, r, n)}


def test_business_seconds_are_counted_in_the_policys_hours_across_a_weekend_and_a_dst_change(owner, business):
    w, d, r, n = business["tickets"]
    responses = dict(TicketMetrics.objects.values_list("ticket_id", "first_response_business_seconds"))
    assert [responses[t.pk] for t in (w, d, r, n)] == [9000.0, 36000.0, 1200.0, None]
    solved = dict(TicketResolution.objects.values_list("ticket_id", "business_seconds"))
    assert [solved[t.pk] for t in (w, d, r, n)] == [28800.0, 64800.0, 7200.0, None]
    calendar = dict(TicketResolution.objects.values_list("ticket_id", "seconds"))
    assert [calendar[t.pk] for t in (w, d, r, n)] == [259200.0, 406800.0, 7200.0, 5400.0]


def test_time_reports_in_business_hours_count_only_tickets_under_a_policy(owner, business):
    # [9000, 36000, 1200]: the median is the middle one, p90 interpolates 9000 + 0.8 * 27000
    assert report(owner, "responseTime", **MARCH, clock="business")["summary"] == {
        "count": 3, "averageSeconds": 15400.0, "medianSeconds": 9000.0, "p90Seconds": 30600.0,
    }  # fmt: skip
    # the calendar's: the four tickets, the 24/7 one the same in both
    calendar = report(owner, "responseTime", **MARCH)["summary"]
    assert calendar["count"] == 4 and calendar["averageSeconds"] == (239400 + 320400 + 1200 + 1800) / 4
    assert report(owner, "responseTime", **MARCH, clock="calendar")["summary"] == calendar
    # [28800, 64800, 7200]
    assert report(owner, "resolutionTime", **MARCH, clock="business")["summary"] == {
        "count": 3, "averageSeconds": 33600.0, "medianSeconds": 28800.0, "p90Seconds": 57600.0,
    }  # fmt: skip
    x, y, team = (str(business[k].pk) for k in ("x", "y", "team"))
    assert report(owner, "responseTimePerAgent", **MARCH, clock="business")["rows"] == [
        {
            "agentID": x,
            "count": 2,
            "averageSeconds": 22500.0,
            "medianSeconds": 22500.0,
            "p90Seconds": 33300.0,
        },
        {"agentID": y, "count": 1, "averageSeconds": 1200.0, "medianSeconds": 1200.0, "p90Seconds": 1200.0},
    ]
    per_team = report(owner, "resolutionTimePerTeam", **MARCH, clock="business")["rows"]
    assert {row["teamID"]: row["averageSeconds"] for row in per_team} == {team: 28800.0, None: 36000.0}
    hours = report(owner, "responseTime24", **MARCH, clock="business")["series"]
    # answered at 10:30 CET, 10:00 CEST and 11:20 CET
    assert [(p["hour"], p["count"], p["averageSeconds"]) for p in hours if p["count"]] == [
        (10, 2, 22500.0),
        (11, 1, 1200.0),
    ]


def test_a_24_7_policy_counts_calendar_time(owner, business):
    round_the_clock = {"agentIDs[]": str(business["y"].pk)}  # only R, under the 24/7 policy, is Y's
    calendar = report(owner, "resolutionTime", **MARCH, **round_the_clock)["summary"]
    assert (
        calendar == report(owner, "resolutionTime", **MARCH, **round_the_clock, clock="business")["summary"]
    )
    assert calendar["averageSeconds"] == 7200.0


def test_csv_gives_the_same_numbers_in_business_hours(owner, business):
    response = owner.client.get(
        "/v1/reports/responseTime", {**MARCH, "clock": "business"}, HTTP_ACCEPT="text/csv"
    )
    assert response.status_code == 200
    assert response.content.decode().splitlines() == [
        "start,count,averageSeconds,medianSeconds,p90Seconds",
        "2026-03-01T00:00:00+01:00,3,15400.0,9000.0,30600.0",
        "total,3,15400.0,9000.0,30600.0",
    ]


@pytest.mark.parametrize(
    ("name", "params", "error"),
    [
        (
            "responseTime",
            {"clock": "wall"},
            "Select a valid choice. wall is not one of the available choices.",
        ),
        ("resolutionTimePerAgent", {"clock": ""}, "Must be one of: calendar, business."),
        ("newTickets", {"clock": "business"}, "Only the time reports take a clock."),
        ("rating24", {"clock": "calendar"}, "Only the time reports take a clock."),
        ("status", {"clock": "business", "status": "open"}, "Only the time reports take a clock."),
        ("failedEmails", {"clock": "business"}, "Only the time reports take a clock."),
    ],
)
def test_a_bad_clock_or_a_clock_for_a_report_without_time_is_a_400_naming_it(owner, name, params, error):
    assert bad(owner, name, **params) == {"clock": [error]}


def _documents(persona, monkeypatch, **params):
    """{name: (from the rollups, from the rows)} of every time report in business hours."""
    from tickets.reports import rollups
    from tickets.reports.api import report_document

    documents = {}
    for name in time_reports():
        data = QueryDict(mutable=True)
        data.update({**params, "clock": "business"})
        with monkeypatch.context() as patched:
            patched.setattr(rollups, "covers", lambda report, query: False)
            from_rows = report_document(name, data, persona.license)
        documents[name] = (report_document(name, data, persona.license), from_rows)
    return documents


def test_business_reports_from_the_rollups_equal_the_reports_from_the_rows(owner, business, monkeypatch):
    from tickets.reports import rollups

    served = []
    real_covers = rollups.covers
    monkeypatch.setattr(rollups, "covers", lambda r, q: served.append(q.clock) or real_covers(r, q))
    wide = {"from": "2026-02-25", "to": "2026-04-05"}
    ragged = {"from": "2026-03-06T15:30:00Z", "to": "2026-03-30T08:30:00Z"}
    for zone, range_, interval in itertools.product(
        ("UTC", "Europe/Warsaw", "America/New_York", "Asia/Kathmandu"),
        (wide, ragged),
        ("hour", "day", "week"),
    ):
        for name, (rolled, rows) in _documents(
            owner, monkeypatch, **range_, timezone=zone, interval=interval
        ).items():
            assert rolled == rows, (name, zone, interval)
            assert rolled["summary"]["count"] == (3 if range_ is wide or name.startswith("response") else 2)
    assert "business" in served
    assert_rollups_recount(owner.license.pk)
    # the license's daily rows of business responses: each in its histogram bucket, with its business seconds
    days = ReportRollup.objects.filter(license=owner.license, metric="response.business", dim="", grain="d")
    assert sorted((r.hour.date().isoformat(), r.key, r.count, r.seconds) for r in days.exclude(count=0)) == [
        ("2026-03-09", str(rollups.bucket(1200)), 1, 1200.0),
        ("2026-03-09", str(rollups.bucket(9000)), 1, 9000.0),
        ("2026-03-30", str(rollups.bucket(36000)), 1, 36000.0),
    ]


def test_business_percentiles_located_in_sql_equal_those_read_from_every_histogram_bucket(
    owner, business, monkeypatch
):
    from tickets.reports import rollups
    from tickets.reports.api import report_document

    monkeypatch.setattr(rollups, "exact_limit", lambda: 0)  # the histograms answer
    for name in time_reports():
        data = QueryDict(mutable=True)
        data.update({**MARCH, "interval": "day", "clock": "business"})
        from_sql = report_document(name, data, owner.license)
        with monkeypatch.context() as patched:
            patched.setattr(rollups, "sql_percentiles", lambda: False)
            assert report_document(name, data, owner.license) == from_sql, name
        assert from_sql["summary"]["count"] == 3
        # counts and averages exact, percentiles within the histogram's precision
        expected = 15400.0 if name.startswith("response") else 33600.0
        assert from_sql["summary"]["averageSeconds"] == expected


def test_business_rollups_follow_silo_moves_and_purges(owner, business):
    from tickets import purge

    w, d, r, n = business["tickets"]
    with time_machine.travel(at("2026-04-02T10:00"), tick=False):
        services.ticket_update(ticket=w, silo="spam")
    assert report(owner, "responseTime", **MARCH, clock="business")["summary"]["count"] == 2
    assert_rollups_recount(owner.license.pk)
    with time_machine.travel(at("2026-04-02T10:00"), tick=False):
        services.ticket_update(ticket=w, silo="tickets")
        update_at("2026-04-02T10:00", d, status="open")
        services.ticket_delete(ticket=r)
    # D reopened on Thursday 2 April 12:00 CEST, solved on Friday 3 April 09:30 CEST: 5 h + 0.5 h
    update_at("2026-04-03T07:30", d, status="solved", force=True)
    assert TicketResolution.objects.filter(ticket=d).order_by("solved_at").last().business_seconds == 19800.0
    assert_rollups_recount(owner.license.pk)
    with time_machine.travel(at("2026-08-01T00:00"), tick=False):
        assert not purge.purge_expired().skipped
    assert report(owner, "resolutionTime", **MARCH, clock="business")["summary"]["count"] == 2
    assert_rollups_recount(owner.license.pk)


def test_client_messages_after_the_first_response_change_nothing(owner, business):
    w = business["tickets"][0]
    client_at("2026-03-10T10:00", w)
    assert TicketMetrics.objects.get(ticket=w).first_response_business_seconds == 9000.0
    assert_rollups_recount(owner.license.pk)


def test_the_migration_backfills_business_seconds_and_their_rollups(owner, business):
    # given the rows and rollups the writes kept, and the business values and rollups dropped
    kept_responses = sorted(TicketMetrics.objects.values_list("ticket_id", "first_response_business_seconds"))
    kept_solved = sorted(TicketResolution.objects.values_list("ticket_id", "business_seconds"))
    TicketMetrics.objects.update(first_response_business_seconds=None)
    TicketResolution.objects.update(business_seconds=None)
    ReportRollup.objects.filter(metric__endswith=".business").delete()
    # when the migrations backfill them (0028) and recount the rollups (0031)
    _migrate()
    # then they are what the writes kept (the policies did not change since), and the rollups recount
    assert sorted(TicketMetrics.objects.values_list("ticket_id", "first_response_business_seconds")) == (
        kept_responses
    )
    assert sorted(TicketResolution.objects.values_list("ticket_id", "business_seconds")) == kept_solved
    assert_rollups_recount(owner.license.pk)


def test_business_seconds_cost_a_write_no_statement(owner, monkeypatch):
    from django.test.utils import CaptureQueriesContext

    from helpdesk.transactions import unit_of_work
    from tickets.sla import apply

    # given an office-hours policy and two tickets under it, the second's business seconds not counted
    hours = sla_services.business_hours_create(
        license=owner.license, name="Warsaw", timezone="Europe/Warsaw", week=OFFICE
    )
    sla_services.sla_policy_create(
        license=owner.license, name="Office", targets=TARGETS, business_hours_id=hours.pk
    )
    # the license's copies kept per process (its own addresses for the reply's mail, ...) are read by its first
    # write only: a warm-up reply first, so that both counted runs find them loaded
    warm = ticket_at("2026-03-06T15:00", license=owner.license, subject="warm-up")
    with time_machine.travel(at("2026-03-09T09:30"), tick=False), unit_of_work():
        services.ticket_update(ticket=warm, author_agent=owner.agent, message={"text": "Warm-up"})
    counts = {}
    for counted in (True, False):
        ticket = ticket_at("2026-03-06T15:00", license=owner.license, subject=f"counted {counted}")
        counts[counted] = []
        with monkeypatch.context() as patched:
            if not counted:
                patched.setattr(apply, "business_seconds", lambda ticket, start, end: None)
            for moment, change in (
                ("2026-03-09T09:30", {"author_agent": owner.agent, "message": {"text": "Answer"}}),
                ("2026-03-09T15:00", {"status": "solved", "force": True}),
            ):
                with (
                    time_machine.travel(at(moment), tick=False),
                    unit_of_work(),
                    CaptureQueriesContext(connection) as queries,
                ):
                    ticket = services.ticket_update(ticket=ticket, **change)
                assert not any("tickets_slapolicy" in q["sql"] for q in queries.captured_queries)
                counts[counted].append(len(queries.captured_queries))
    # then the business seconds (1 h on Friday + 1 h 30 on Monday; 1 h + 7 h) are kept in the same statements
    counted_ones = {"ticket__subject__startswith": "counted"}
    metrics = dict(
        TicketMetrics.objects.filter(**counted_ones).values_list(
            "ticket__subject", "first_response_business_seconds"
        )
    )
    assert metrics == {"counted True": 9000.0, "counted False": None}
    solved = dict(
        TicketResolution.objects.filter(**counted_ones).values_list("ticket__subject", "business_seconds")
    )
    assert solved == {"counted True": 28800.0, "counted False": None}
    assert counts[True] == counts[False]


def test_the_rebuild_command_checks_and_recounts_the_business_rollups(owner, business):
    from django.core.management import CommandError, call_command

    license = ["--license", str(owner.license.pk)]
    call_command("rebuild_report_rollups", *license, "--check")  # what the writes kept is the recount
    # given a business rollup row gone wrong
    row = (
        ReportRollup.objects.filter(license=owner.license, metric="resolution.business")
        .exclude(count=0)
        .first()
    )
    row.seconds += 60
    row.save()
    with pytest.raises(CommandError):
        call_command("rebuild_report_rollups", *license, "--check")
    # when the rollups are rebuilt, then they are right again
    call_command("rebuild_report_rollups", *license)
    call_command("rebuild_report_rollups", *license, "--check")
    assert report(owner, "resolutionTime", **MARCH, clock="business")["summary"]["averageSeconds"] == 33600.0


def _migrate():
    importlib.import_module("tickets.migrations.0028_report_business_time").backfill(
        django_apps, connection.schema_editor()
    )
    importlib.import_module("tickets.migrations.0031_rebuild_report_rollups").rebuild(
        django_apps, connection.schema_editor()
    )


def test_the_migration_recounts_every_rollup_of_a_license_that_has_none(owner, business):
    # given an install upgraded from before 0022, whose rollups 0031 recounts: none yet, no business seconds
    kept = sorted(TicketResolution.objects.values_list("ticket_id", "business_seconds"))
    ReportRollup.objects.all().delete()
    TicketResolution.objects.update(business_seconds=None)
    # when the migrations run
    _migrate()
    # then the business seconds are back and every rollup is the recount
    assert sorted(TicketResolution.objects.values_list("ticket_id", "business_seconds")) == kept
    assert ReportRollup.objects.filter(license=owner.license, metric="new").exists()
    assert_rollups_recount(owner.license.pk)
    assert report(owner, "resolutionTime", **MARCH, clock="business")["summary"]["count"] == 3
