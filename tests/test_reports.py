"""GET /v1/reports/<name>: hand-made histories and the numbers they must give (time zones with DST, CSV,
roles, bad input), and the reconciliation of new tickets with the search's X-Total-Results."""

from __future__ import annotations

import datetime
import importlib
import itertools
import uuid

import pytest
import time_machine
from django.apps import apps as django_apps
from django.db import connection

from helpdesk.roles import ROLE_NORMAL
from tests.factories import AgentFactory, TagFactory, TeamFactory, TicketFactory
from tickets import services
from tickets.models import STATUSES, Ticket
from tickets.reports.models import TicketMetrics, TicketResolution
from tickets.reports.registry import REPORTS

UTC = datetime.UTC
RANGE = {"from": "2026-03-02", "to": "2026-03-04"}


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text).replace(tzinfo=UTC)


def ticket_at(moment: str, **kwargs) -> Ticket:
    with time_machine.travel(at(moment), tick=False):
        return TicketFactory(**kwargs)


def update_at(moment: str, ticket: Ticket, **kwargs) -> Ticket:
    with time_machine.travel(at(moment), tick=False):
        return services.ticket_update(ticket=ticket, **kwargs)


def reply_at(moment: str, ticket: Ticket, agent, *, private=False) -> Ticket:
    return update_at(moment, ticket, author_agent=agent, message={"text": "Answer", "isPrivate": private})


def client_at(moment: str, ticket: Ticket) -> Ticket:
    return update_at(moment, ticket, author_type="client", message={"text": "More from me"})


def report(persona, name: str, **params):
    response = persona.client.get(f"/v1/reports/{name}", params)
    assert response.status_code == 200, response.content
    return response.json()


def bad(persona, name: str, **params) -> dict:
    response = persona.client.get(f"/v1/reports/{name}", params)
    assert response.status_code == 400, response.content
    return response.json()["details"]


# --- new tickets and the time zone -------------------------------------------------------------------------------


def test_new_tickets_are_counted_per_local_day_across_the_spring_dst_change(owner):
    # given tickets around Europe/Warsaw's midnights on the weekend clocks move forward (2026-03-29, 23 hours)
    for moment in ("2026-03-28T22:30", "2026-03-28T23:30", "2026-03-29T21:30", "2026-03-29T22:30"):
        ticket_at(moment, license=owner.license)
    # when the owner asks per day in Warsaw
    body = report(
        owner, "newTickets", **{"from": "2026-03-28", "to": "2026-03-31", "timezone": "Europe/Warsaw"}
    )
    # then the days are Warsaw's: 23:30 on the 28th, two on the 29th (00:30 and 23:30), 00:30 on the 30th
    assert body["series"] == [
        {"start": "2026-03-28T00:00:00+01:00", "count": 1},
        {"start": "2026-03-29T00:00:00+01:00", "count": 2},
        {"start": "2026-03-30T00:00:00+02:00", "count": 1},
    ]
    assert body["summary"] == {"count": 4}
    assert (body["name"], body["interval"], body["timezone"]) == ("newTickets", "day", "Europe/Warsaw")
    assert (body["from"], body["to"]) == ("2026-03-28T00:00:00+01:00", "2026-03-31T00:00:00+02:00")
    # and in UTC the same tickets fall on other days
    utc = report(owner, "newTickets", **{"from": "2026-03-28", "to": "2026-03-30"})
    assert [point["count"] for point in utc["series"]] == [2, 2]


def test_hourly_buckets_skip_the_missing_hour_and_the_24_report_counts_per_local_hour(owner):
    ticket_at("2026-03-29T00:30", license=owner.license)  # 01:30 CET
    ticket_at("2026-03-29T01:30", license=owner.license)  # 03:30 CEST (02:00-03:00 does not exist)
    ticket_at("2026-03-30T01:10", license=owner.license)  # 03:10 CEST the next day
    params = {"from": "2026-03-29T01:00:00", "to": "2026-03-29T05:00:00", "timezone": "Europe/Warsaw"}
    hourly = report(owner, "newTickets", interval="hour", **params)
    assert hourly["series"] == [
        {"start": "2026-03-29T01:00:00+01:00", "count": 1},
        {"start": "2026-03-29T03:00:00+02:00", "count": 1},
        {"start": "2026-03-29T04:00:00+02:00", "count": 0},
    ]
    per_hour = report(
        owner, "newTickets24", **{"from": "2026-03-28", "to": "2026-04-01", "timezone": "Europe/Warsaw"}
    )
    counts = {point["hour"]: point["count"] for point in per_hour["series"]}
    assert len(per_hour["series"]) == 24 and per_hour["interval"] == "hour"
    assert counts[1] == 1 and counts[3] == 2 and sum(counts.values()) == 3


def test_the_hour_that_repeats_when_clocks_fall_back_is_one_bucket_and_its_day_25_hours(owner):
    ticket_at("2026-10-25T00:30", license=owner.license)  # 02:30 CEST
    ticket_at("2026-10-25T01:30", license=owner.license)  # 02:30 CET, an hour later
    ticket_at("2026-10-25T22:30", license=owner.license)  # 23:30 CET, still the 25th
    zone = {"timezone": "Europe/Warsaw"}
    hourly = report(
        owner, "newTickets", interval="hour", **zone, **{"from": "2026-10-25", "to": "2026-10-25T04:00:00"}
    )
    assert [(p["start"], p["count"]) for p in hourly["series"]] == [
        ("2026-10-25T00:00:00+02:00", 0),
        ("2026-10-25T01:00:00+02:00", 0),
        ("2026-10-25T02:00:00+02:00", 2),
        ("2026-10-25T03:00:00+01:00", 0),
    ]
    daily = report(owner, "newTickets", **zone, **{"from": "2026-10-25", "to": "2026-10-27"})
    assert daily["series"] == [
        {"start": "2026-10-25T00:00:00+02:00", "count": 3},
        {"start": "2026-10-26T00:00:00+01:00", "count": 0},
    ]


def test_spam_and_trash_leave_the_reports_and_come_back_with_the_ticket(owner):
    ticket = ticket_at("2026-03-02T08:00", license=owner.license)
    reply_at("2026-03-02T09:00", ticket, owner.agent)
    update_at("2026-03-02T09:30", ticket, status="solved", force=True)
    update_at("2026-03-02T10:00", ticket, silo="spam")
    assert report(owner, "responseTime", **RANGE)["summary"]["count"] == 0
    assert report(owner, "resolutionTime", **RANGE)["summary"]["count"] == 0
    assert report(owner, "newTickets", **RANGE)["summary"]["count"] == 0
    update_at("2026-03-02T11:00", ticket, silo="tickets")
    assert report(owner, "responseTime", **RANGE)["summary"]["averageSeconds"] == 3600.0
    assert report(owner, "resolutionTime", **RANGE)["summary"]["averageSeconds"] == 5400.0
    response = owner.client.get("/v1/reports/newTickets", {**RANGE, "format": "csv"})
    assert response.content.decode().splitlines()[-1] == "total,1"


def test_weeks_start_on_monday_and_months_on_the_first_in_the_callers_zone(owner):
    ticket_at("2026-03-01T23:30", license=owner.license)  # Monday 2 March 00:30 in Warsaw, Sunday in UTC
    ticket_at("2026-03-31T22:30", license=owner.license)  # 1 April 00:30 in Warsaw
    weekly = report(
        owner,
        "newTickets",
        interval="week",
        **{"from": "2026-02-23", "to": "2026-03-09", "timezone": "Europe/Warsaw"},
    )
    assert weekly["series"] == [
        {"start": "2026-02-23T00:00:00+01:00", "count": 0},
        {"start": "2026-03-02T00:00:00+01:00", "count": 1},
    ]
    monthly = report(
        owner,
        "newTickets",
        interval="month",
        **{"from": "2026-03-01", "to": "2026-05-01", "timezone": "Europe/Warsaw"},
    )
    assert monthly["series"] == [
        {"start": "2026-03-01T00:00:00+01:00", "count": 1},
        {"start": "2026-04-01T00:00:00+02:00", "count": 1},
    ]


# --- response and resolution times ---------------------------------------------------------------------------


@pytest.fixture
def history(owner):
    """Three tickets on 2 and 3 March 2026 (UTC), answered by two agents, one solved, reopened, solved again.

    First responses: A 3600 s (09:00, by X), B 1800 s (11:30, by Y, from the client's first message, not the
    ticket's creation by an agent), C 7200 s (14:00, by X). Resolutions: A 14400 s (2 March 12:00), B 10800 s
    (2 March 13:00), A again 3600 s (3 March 09:00, from its reopening at 08:00)."""
    x = owner.agent
    y = AgentFactory(license=owner.license, roles=[ROLE_NORMAL])
    team = TeamFactory(license=owner.license)
    a = ticket_at("2026-03-02T08:00", license=owner.license, assignment={"agent": x})
    reply_at("2026-03-02T08:10", a, x, private=True)  # a private note is no response
    reply_at("2026-03-02T09:00", a, x)
    reply_at("2026-03-02T10:00", a, x)  # a second reply is no first response
    update_at("2026-03-02T12:00", a, status="solved", force=True)
    update_at("2026-03-03T08:00", a, status="open")
    update_at("2026-03-03T09:00", a, status="solved", force=True)
    b = ticket_at("2026-03-02T10:00", license=owner.license, author_type="agent")
    client_at("2026-03-02T11:00", b)
    update_at("2026-03-02T11:20", b, assignment={"agent": y, "team": team})
    reply_at("2026-03-02T11:30", b, y)
    update_at("2026-03-02T13:00", b, status="solved", force=True)
    c = ticket_at("2026-03-02T12:00", license=owner.license)
    reply_at("2026-03-02T14:00", c, x)
    return {"x": x, "y": y, "team": team, "tickets": (a, b, c)}


def test_response_time_is_from_the_clients_first_message_to_the_first_public_agent_reply(owner, history):
    body = report(owner, "responseTime", **RANGE)
    # [1800, 3600, 7200]: the median is the middle one, the 90th percentile interpolates 3600 + 0.8 * 3600
    assert body["summary"] == {
        "count": 3,
        "averageSeconds": 4200.0,
        "medianSeconds": 3600.0,
        "p90Seconds": 6480.0,
    }
    assert body["series"][0] == {"start": "2026-03-02T00:00:00Z", **body["summary"]}
    assert body["series"][1] == {
        "start": "2026-03-03T00:00:00Z", "count": 0, "averageSeconds": None, "medianSeconds": None, "p90Seconds": None,
    }  # fmt: skip


def test_resolution_time_starts_a_new_cycle_at_a_reopening(owner, history):
    body = report(owner, "resolutionTime", **RANGE)
    assert body["summary"] == {
        "count": 3,
        "averageSeconds": 9600.0,
        "medianSeconds": 10800.0,
        "p90Seconds": 13680.0,
    }
    assert body["series"] == [
        {"start": "2026-03-02T00:00:00Z", "count": 2, "averageSeconds": 12600.0, "medianSeconds": 12600.0,
         "p90Seconds": 14040.0},
        {"start": "2026-03-03T00:00:00Z", "count": 1, "averageSeconds": 3600.0, "medianSeconds": 3600.0,
         "p90Seconds": 3600.0},
    ]  # fmt: skip
    assert TicketResolution.objects.filter(ticket=history["tickets"][0]).count() == 2


def test_per_agent_and_per_team_rows_name_who_answered_and_who_solved(owner, history):
    x, y, team = str(history["x"].pk), str(history["y"].pk), str(history["team"].pk)
    responses = report(owner, "responseTimePerAgent", **RANGE)["rows"]
    assert responses == [
        {"agentID": x, "count": 2, "averageSeconds": 5400.0, "medianSeconds": 5400.0, "p90Seconds": 6840.0},
        {"agentID": y, "count": 1, "averageSeconds": 1800.0, "medianSeconds": 1800.0, "p90Seconds": 1800.0},
    ]
    solved = report(owner, "resolutionTimePerAgent", **RANGE)["rows"]
    assert [(row["agentID"], row["count"]) for row in solved] == [(x, 2), (y, 1)]
    per_team = report(owner, "resolutionTimePerTeam", **RANGE)["rows"]
    counts = {row["teamID"]: row["count"] for row in per_team}
    assert counts[team] == 1 and sum(counts.values()) == 3
    hours = report(owner, "responseTime24", **RANGE)["series"]
    assert [(p["hour"], p["count"]) for p in hours if p["count"]] == [(9, 1), (11, 1), (14, 1)]


def test_filters_select_tickets_by_assignee(owner, history):
    body = report(owner, "responseTime", **RANGE, **{"agentIDs[]": str(history["y"].pk)})
    assert body["summary"]["count"] == 1 and body["summary"]["averageSeconds"] == 1800.0


def test_the_metrics_are_backfilled_from_the_events_as_the_writes_keep_them(owner, history):
    kept = sorted(
        TicketMetrics.objects.values_list("ticket_id", "first_response_seconds", "cycle_started_at")
    )
    resolutions = sorted(TicketResolution.objects.values_list("ticket_id", "seconds"))
    TicketMetrics.objects.all().delete()
    TicketResolution.objects.all().delete()
    importlib.import_module("tickets.migrations.0014_reports").backfill(
        django_apps, connection.schema_editor()
    )
    assert (
        sorted(TicketMetrics.objects.values_list("ticket_id", "first_response_seconds", "cycle_started_at"))
        == kept
    )
    assert sorted(TicketResolution.objects.values_list("ticket_id", "seconds")) == resolutions


# --- ratings, status, sources, failed mail -----------------------------------------------------------------------


def test_ratings_count_good_and_bad_by_when_customers_rated(owner):
    x = owner.agent
    first = ticket_at("2026-03-02T08:00", license=owner.license, assignment={"agent": x})
    second = ticket_at("2026-03-02T08:00", license=owner.license)
    third = ticket_at("2026-03-02T08:00", license=owner.license)
    for moment, ticket, score in (
        ("2026-03-02T10:00", first, "good"), ("2026-03-02T11:00", second, "bad"), ("2026-03-03T10:00", third, "good"),
    ):  # fmt: skip
        with time_machine.travel(at(moment), tick=False):
            services.ticket_rate(ticket=ticket, score=score)
    body = report(owner, "rating", **RANGE)
    assert body["summary"] == {"good": 2, "bad": 1, "count": 3}
    assert [p["good"] for p in body["series"]] == [1, 1] and [p["bad"] for p in body["series"]] == [1, 0]
    rows = report(owner, "ratingPerAgent", **RANGE)["rows"]
    assert {row["agentID"]: row["count"] for row in rows} == {None: 2, str(x.pk): 1}


def test_status_reports_count_the_tickets_of_the_range_now_in_the_status(owner):
    x = owner.agent
    open_one = ticket_at("2026-03-02T08:00", license=owner.license, assignment={"agent": x})
    ticket_at("2026-03-02T09:00", license=owner.license)
    update_at("2026-03-02T10:00", open_one, status="pending")
    body = report(owner, "status", status="open", **RANGE)
    assert body["summary"] == {"count": 1}
    assert report(owner, "statusPerAgent", status="pending", **RANGE)["rows"] == [
        {"agentID": str(x.pk), "count": 1}
    ]


def test_ticket_sources_per_hour_of_the_day(owner):
    ticket_at("2026-03-02T08:15", license=owner.license)  # created through the services by the tests: system
    with time_machine.travel(at("2026-03-02T09:15"), tick=False):
        response = owner.client.post(
            "/v1/tickets",
            {"subject": "Hi", "requester": {"email": "c@example.com"}, "message": {"text": "Hello there"}},
            format="json",
        )
    assert response.status_code == 201, response.content
    body = report(owner, "ticketSources24", **RANGE)
    assert body["summary"]["api"] == {"count": 1} and body["summary"]["system"] == {"count": 1}
    assert body["series"][9]["api"] == {"count": 1} and body["series"][8]["system"] == {"count": 1}


def test_failed_emails_are_counted_by_when_they_were_queued(owner):
    from templates_app.models import OutboundMessage

    for n, status in enumerate(["failed", "failed", "sent"]):
        OutboundMessage.objects.create(
            license=owner.license, key=f"k{n}", kind="test", to="a@example.com", subject="s", text="t",
            status=status, created_at=at("2026-03-02T10:00"),
        )  # fmt: skip
    assert report(owner, "failedEmails", **RANGE)["summary"] == {"count": 2}


# --- CSV, roles, bad input --------------------------------------------------------------------------------------


def test_csv_gives_the_same_numbers(owner, history):
    response = owner.client.get("/v1/reports/responseTime", RANGE, HTTP_ACCEPT="text/csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response.content.decode().splitlines() == [
        "start,count,averageSeconds,medianSeconds,p90Seconds",
        "2026-03-02T00:00:00Z,3,4200.0,3600.0,6480.0",
        "2026-03-03T00:00:00Z,0,,,",
        "total,3,4200.0,3600.0,6480.0",
    ]
    rows = owner.client.get("/v1/reports/resolutionTimePerAgent", RANGE, HTTP_ACCEPT="text/csv")
    assert rows.content.decode().splitlines()[0] == "agentID,count,averageSeconds,medianSeconds,p90Seconds"
    error = owner.client.get("/v1/reports/nope", HTTP_ACCEPT="text/csv")
    assert error.status_code == 400 and error.json()["details"]["name"]


def test_owners_and_normal_agents_read_reports_viewers_do_not(personas):
    for role, persona in personas.items():
        response = persona.client.get("/v1/reports/newTickets")
        assert response.status_code == (403 if role == "viewer" else 200), (role, response.content)


def test_every_report_answers_with_its_name(owner):
    for name in sorted(REPORTS):
        params = {"status": "open"} if name.startswith("status") else {}
        body = report(owner, name, **params)
        assert body["name"] == name and "summary" in body and ("series" in body or "rows" in body)


def test_the_default_range_is_the_last_7_days_in_the_callers_zone(owner):
    with time_machine.travel(at("2026-03-10T12:00"), tick=False):
        body = report(owner, "newTickets", timezone="Europe/Warsaw")
    assert (body["from"], body["to"]) == ("2026-03-04T00:00:00+01:00", "2026-03-11T00:00:00+01:00")
    assert len(body["series"]) == 7


@pytest.mark.parametrize(
    ("name", "params", "named"),
    [
        ("newTickets", {"from": "2026-03-02", "to": "2026-03-01"}, "to"),
        ("newTickets", {"from": "2026-03-02", "to": "2026-03-02"}, "to"),
        ("newTickets", {"from": "2020-01-01", "to": "2022-06-01", "interval": "hour"}, "interval"),
        ("nope", {}, "name"),
        ("newTickets", {"teamID": str(uuid.uuid4())}, "teamID"),
        ("newTickets", {"from": "yesterday"}, "from"),
        ("newTickets", {"timezone": "Mars/Olympus"}, "timezone"),
        ("newTickets", {"interval": "year"}, "interval"),
        ("newTickets", {"teamIDs[]": str(uuid.uuid4())}, "teamIDs[]"),
        ("newTickets", {"agentIDs[]": "not-a-uuid"}, "agentIDs[]"),
        ("newTickets", {"status": "open"}, "status"),
        ("status", {}, "status"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(owner, name, params, named):
    assert named in bad(owner, name, **params)


def test_another_licenses_ids_are_refused_and_its_tickets_never_counted(owner, outsider):
    team, tag = TeamFactory(license=outsider.license), TagFactory(license=outsider.license)
    assert "teamIDs[]" in bad(owner, "newTickets", **{"teamIDs[]": str(team.pk)})
    assert "tagIDs[]" in bad(owner, "newTickets", **{"tagIDs[]": str(tag.pk)})
    assert "agentIDs[]" in bad(owner, "newTickets", **{"agentIDs[]": str(outsider.agent.pk)})
    TicketFactory(license=owner.license)
    assert report(outsider, "newTickets")["summary"] == {"count": 0}
    assert report(owner, "newTickets")["summary"] == {"count": 1}


# --- exact: new tickets reconcile with the search ----------------------------------------------------------------


def _search_total(persona, params) -> int:
    """The search's X-Total-Results over every status of the reported silos (the search takes one of each)."""
    total = 0
    for silo in ("tickets", "archive"):
        for status in STATUSES:
            response = persona.client.get(
                "/v1/tickets", {**params, "status": status, "silo": silo, "pageSize": 1}
            )
            assert response.status_code == 200, response.content
            total += int(response["X-Total-Results"])
    return total


def test_new_tickets_reconcile_with_the_search_for_every_filter_after_merges_deletions_purges_and_moves(
    owner,
):
    # given tickets in and around a Warsaw week, with teams, tags, assignees, statuses and silos of all kinds
    from tickets import purge

    lic, x = owner.license, owner.agent
    t1, t2 = TeamFactory(license=lic), TeamFactory(license=lic)
    g1, g2 = TagFactory(license=lic), TagFactory(license=lic)
    made = []
    moments = [
        "2026-03-01T22:59",
        "2026-03-02T08:00",
        "2026-03-04T12:00",
        "2026-03-08T22:30",
        "2026-03-09T00:30",
    ]
    for n, moment in enumerate(moments * 3):
        made.append(
            ticket_at(
                moment,
                license=lic,
                teams=[[t1], [t2], [t1, t2]][n % 3],
                tags=[[g1], [g1, g2], []][n % 3],
                assignment={"agent": x} if n % 2 else None,
            )
        )
    update_at("2026-03-05T10:00", made[1], status="solved", force=True)
    update_at("2026-03-05T10:00", made[2], status="pending")
    update_at("2026-03-05T10:00", made[3], silo="archive")
    update_at("2026-03-05T10:00", made[4], silo="spam")
    with time_machine.travel(at("2026-03-05T10:00"), tick=False):
        services.ticket_merge(ticket=made[5], child=made[6])  # a merged child stays a ticket of its own
        services.ticket_delete(ticket=made[7])  # to the trash: out of the search and the reports
        services.ticket_delete(ticket=made[8])
    with time_machine.travel(at("2026-06-01T00:00"), tick=False):
        assert not purge.purge_expired().skipped  # the trash and spam of March are purged: gone from both
    assert not Ticket.objects.filter(pk=made[8].pk).exists()
    zone = {"timezone": "Europe/Warsaw"}
    range_ = {"from": "2026-03-02", "to": "2026-03-09"}
    search_range = {"createdDateFrom": "2026-03-02", "createdDateTo": "2026-03-09"}
    filters = [
        ({}, {}),
        ({"teamIDs[]": str(t1.pk)}, {"teamIDs[]": str(t1.pk)}),
        ({"teamIDs[]": [str(t1.pk), str(t2.pk)]}, {"teamIDs[]": [str(t1.pk), str(t2.pk)]}),
        ({"tagIDs[]": str(g1.pk)}, {"tagIDs[]": str(g1.pk)}),
        ({"tagIDs[]": [str(g1.pk), str(g2.pk)]}, {"tagIDs[]": [str(g1.pk), str(g2.pk)]}),
        ({"agentIDs[]": str(x.pk)}, {"assignment.agentID": str(x.pk)}),
        ({"teamIDs[]": str(t2.pk), "tagIDs[]": str(g1.pk), "agentIDs[]": str(x.pk)},
         {"teamIDs[]": str(t2.pk), "tagIDs[]": str(g1.pk), "assignment.agentID": str(x.pk)}),
    ]  # fmt: skip
    for report_filters, search_filters in filters:
        # when the report and the search are asked the same
        body = report(owner, "newTickets", **zone, **range_, **report_filters)
        expected = _search_total(owner, {**zone, **search_range, **search_filters})
        # then they agree, and the buckets add up to the summary
        assert body["summary"]["count"] == expected, report_filters
        assert sum(point["count"] for point in body["series"]) == expected
    assert report(owner, "newTickets", **zone, **range_)["summary"]["count"] > 0
    # and the rollups the writes kept are what a recount makes of the rows that are left
    assert_rollups_recount(lic.pk)


# --- rollups ----------------------------------------------------------------------------------------------------


def assert_rollups_recount(license_id):
    from tickets.reports import rollups

    def rounded(rows):
        return {key: (count, round(seconds, 3)) for key, (count, seconds) in rows.items()}

    assert rounded(rollups.stored(license_id)) == rounded(rollups.expected(license_id))


def every_report(persona, monkeypatch, lists=None, **params):
    """{name: (from the rollups, from the rows)} of every tickets' report (the view's code, without HTTP: the
    rate limit would stop this many requests); `lists`: {"agentIDs[]": [...]}."""
    from django.http import QueryDict

    from tickets.reports import rollups
    from tickets.reports.api import report_document

    documents = {}
    for name in sorted(REPORTS):
        if name == "failedEmails":
            continue
        data = QueryDict(mutable=True)
        data.update({**params, **({"status": "open"} if name.startswith("status") else {})})
        for key, values in (lists or {}).items():
            data.setlist(key, values)
        with monkeypatch.context() as patched:
            patched.setattr(rollups, "covers", lambda report, query: False)
            from_rows = report_document(name, data, persona.license)
        documents[name] = (report_document(name, data, persona.license), from_rows)
    return documents


def test_every_report_from_the_rollups_equals_the_report_from_the_rows(owner, history, monkeypatch):
    # given the history's tickets, rated, moved between statuses and assignees
    a, b, c = history["tickets"]
    with time_machine.travel(at("2026-03-03T10:00"), tick=False):
        services.ticket_rate(ticket=a, score="good")
        services.ticket_rate(ticket=c, score="bad")
        services.ticket_rate(ticket=c, score="good")  # a new rating replaces the old one
    update_at("2026-03-03T11:00", c, assignment={"agent": history["y"], "team": history["team"]})
    wide = {"from": "2026-02-25", "to": "2026-03-10"}  # whole UTC days inside: their day rows
    ragged = {"from": "2026-03-02T08:30:00Z", "to": "2026-03-03T09:30:00Z"}  # parts of hours: from the rows
    for zone, range_, interval in itertools.product(
        ("UTC", "Europe/Warsaw", "America/New_York", "Asia/Kathmandu"),
        (RANGE, wide, ragged),
        ("hour", "day", "week"),
    ):
        # when every report is read from the rollups and from the rows
        params = {**range_, "timezone": zone, "interval": interval}
        for name, (rolled, rows) in every_report(owner, monkeypatch, **params).items():
            # then they are the same (percentiles: few rows, read from the rows; see the next test)
            assert rolled == rows, (name, zone, interval)
    assert_rollups_recount(owner.license.pk)


def test_reports_of_some_agents_from_the_rollups_equal_the_reports_from_the_rows(owner, history, monkeypatch):
    from tickets.reports import rollups

    # given the history's tickets, rated and reassigned, and tickets of other statuses and assignees
    x, y, team = history["x"], history["y"], history["team"]
    a, b, c = history["tickets"]
    with time_machine.travel(at("2026-03-03T10:00"), tick=False):
        services.ticket_rate(ticket=a, score="good")
        services.ticket_rate(ticket=c, score="bad")
    update_at("2026-03-03T11:00", c, assignment={"agent": y, "team": team})
    pending = ticket_at("2026-03-02T16:00", license=owner.license, assignment={"agent": x})
    update_at("2026-03-02T16:10", pending, status="pending")  # through the services: the rollups follow
    onhold = ticket_at("2026-03-03T07:00", license=owner.license, assignment={"agent": y})
    update_at("2026-03-03T07:10", onhold, status="onhold")
    ticket_at("2026-03-03T07:30", license=owner.license)  # nobody's
    spam = ticket_at("2026-03-02T09:00", license=owner.license, assignment={"agent": x})
    update_at("2026-03-02T09:05", spam, silo="spam")
    wide = {"from": "2026-02-25", "to": "2026-03-10"}
    ragged = {"from": "2026-03-02T08:30:00Z", "to": "2026-03-03T09:30:00Z"}
    served = []
    real_covers = rollups.covers
    monkeypatch.setattr(
        rollups, "covers", lambda report, query: served.append(report.name) or real_covers(report, query)
    )
    # (zones and intervals in pairs, not their product: each zone and each interval still meets every agent list
    # and range; the product's 54 cases took ~8 s of the suite's CPU on each backend)
    for agents, range_, (zone, interval) in itertools.product(
        ([x], [y], [x, y]),
        (RANGE, wide, ragged),
        (("UTC", "hour"), ("America/New_York", "day"), ("UTC", "week")),
    ):
        # when every report of those agents is read from the rollups where they answer it, and from the rows
        params = {**range_, "timezone": zone, "interval": interval}
        lists = {"agentIDs[]": [str(agent.pk) for agent in agents]}
        for name, (rolled, rows) in every_report(owner, monkeypatch, lists, **params).items():
            # then they are the same
            assert rolled == rows, (name, agents, zone, interval)
    # and the assignee's reports came from the rollups (the times' from their current-assignee rows); the
    # responder's and the solver's per agent, and the teams', did not
    query = _query(owner, {**wide, "agentIDs[]": [str(x.pk)]})
    for name in ("newTickets", "newTickets24", "status", "status24", "statusPerAgent", "rating", "rating24",
                 "ratingPerAgent", "responseTime", "responseTime24", "resolutionTime", "resolutionTime24"):  # fmt: skip
        assert real_covers(REPORTS[name], _query(owner, {**wide, "agentIDs[]": [str(x.pk)]}, name)), name
    for name in ("responseTimePerAgent", "resolutionTimePerAgent", "responseTimePerTeam", "ratingPerTeam",
                 "statusPerTeam", "ticketSources24"):  # fmt: skip
        assert not real_covers(REPORTS[name], _query(owner, {**wide, "agentIDs[]": [str(x.pk)]}, name)), name
    assert query.agent_ids and served


def _teams_history(owner, history):
    """The history's tickets and more, visible to one team, to two, to none of the listed; reassigned and
    re-teamed after their responses and solves (their rows follow the ticket as it is now)."""
    lic, x, y = owner.license, history["x"], history["y"]
    t1, t2, t3 = history["team"], TeamFactory(license=lic), TeamFactory(license=lic)
    a, b, c = history["tickets"]
    with time_machine.travel(at("2026-03-03T10:00"), tick=False):
        services.ticket_rate(ticket=a, score="good")
        services.ticket_rate(ticket=c, score="bad")
    update_at("2026-03-03T11:00", a, teams=[t1, t2])  # solved twice, then visible to two teams
    update_at("2026-03-03T11:05", b, assignment={"agent": x})  # solved by y, now x's
    update_at("2026-03-03T11:10", c, teams=[t2], assignment={"agent": y, "team": t3})  # t3 joins its links
    both = ticket_at("2026-03-02T15:00", license=lic, teams=[t1, t2], assignment={"agent": y})
    reply_at("2026-03-02T15:30", both, y)
    update_at("2026-03-02T18:00", both, status="solved", force=True)
    update_at("2026-03-03T12:00", both, teams=[t2])  # leaves t1 after its solve
    spam = ticket_at("2026-03-02T09:00", license=lic, teams=[t1], assignment={"agent": x})
    reply_at("2026-03-02T09:20", spam, x)
    update_at("2026-03-02T09:30", spam, silo="spam")  # out of the reports, its links kept
    ticket_at("2026-03-03T07:30", license=lic, teams=[t3])
    return t1, t2, t3, spam


def test_reports_of_some_teams_from_the_rollups_equal_the_reports_from_the_rows(owner, history, monkeypatch):
    from tickets.reports import rollups

    # given tickets visible to one team and to several, whose links and assignees changed after they counted
    t1, t2, t3, _ = _teams_history(owner, history)
    wide = {"from": "2026-02-25", "to": "2026-03-10"}
    ragged = {"from": "2026-03-02T08:30:00Z", "to": "2026-03-03T09:30:00Z"}
    served = []
    real_covers = rollups.covers
    monkeypatch.setattr(
        rollups, "covers", lambda report, query: served.append(report.name) or real_covers(report, query)
    )
    # (zones and intervals in pairs, not their product, as for the agents above)
    for teams, range_, (zone, interval) in itertools.product(
        ([t1], [t2], [t3], [t1, t2], [t1, t2, t3]), (RANGE, wide, ragged),
        (("UTC", "hour"), ("America/New_York", "day")),
    ):  # fmt: skip
        # when every report of those teams (any of them: a ticket visible to two counts once) is read both ways
        params = {**range_, "timezone": zone, "interval": interval}
        lists = {"teamIDs[]": [str(team.pk) for team in teams]}
        for name, (rolled, rows) in every_report(owner, monkeypatch, lists, **params).items():
            # then they are the same
            assert rolled == rows, (name, teams, zone, interval)
    # and the series and the hours of the day came from the rollups; per agent or team, or with agents, not
    ids = {"teamIDs[]": [str(t1.pk), str(t2.pk)]}
    for name in ("newTickets", "newTickets24", "status", "status24", "rating", "rating24", "responseTime",
                 "responseTime24", "resolutionTime", "resolutionTime24", "ticketSources24"):  # fmt: skip
        assert real_covers(REPORTS[name], _query(owner, {**wide, **ids}, name)), name
    for name in ("statusPerAgent", "statusPerTeam", "ratingPerAgent", "responseTimePerTeam"):
        assert not real_covers(REPORTS[name], _query(owner, {**wide, **ids}, name)), name
    agent = {"agentIDs[]": [str(history["x"].pk)]}
    assert not real_covers(REPORTS["newTickets"], _query(owner, {**wide, **ids, **agent}))
    assert served
    assert_rollups_recount(owner.license.pk)
    # and the numbers are the tickets': a ticket visible to both teams once (a, c, both; b is the default team's)
    counts = report(owner, "newTickets", **RANGE, **ids)["summary"]["count"]
    assert counts == Ticket.objects.filter(
        license=owner.license, created_at__gte=at("2026-03-02T00:00"), created_at__lt=at("2026-03-04T00:00"),
        teams__in=[t1, t2], silo__in=["tickets", "archive"],
    ).distinct().count() == 3  # fmt: skip


def _query(persona, params, name="newTickets"):
    from django.http import QueryDict

    from tickets.reports.params import query_of

    data = QueryDict(mutable=True)
    for key, value in {**params, **({"status": "open"} if name.startswith("status") else {})}.items():
        data.setlist(key, value if isinstance(value, list) else [value])
    return query_of(REPORTS[name], data, persona.license)


def test_percentiles_located_in_sql_equal_those_read_from_every_histogram_bucket(owner, history, monkeypatch):
    from tickets.reports import rollups

    # given first responses and resolutions of many lengths over two days, and every range above the exact limit
    x = history["x"]
    for i in range(24):
        ticket = ticket_at(f"2026-03-02T{i:02d}:00", license=owner.license, assignment={"agent": x})
        reply_at(f"2026-03-02T{i:02d}:{i * 2 + 1:02d}", ticket, x)
        update_at(f"2026-03-03T{i:02d}:{i + 3:02d}", ticket, status="solved", force=True)
    monkeypatch.setattr(rollups, "exact_limit", lambda: 0)
    wide = {"from": "2026-02-25", "to": "2026-03-10"}
    for zone, range_, interval in itertools.product(("UTC", "Europe/Warsaw"), (RANGE, wide), ("hour", "day")):
        params = {**range_, "timezone": zone, "interval": interval}
        names = [name for name in sorted(REPORTS) if name.startswith(("responseTime", "resolutionTime"))]
        for name in names:
            # when a time report's percentiles are located in SQL (PostgreSQL) and from every bucket in Python
            from_sql = _document(owner, name, params)
            with monkeypatch.context() as patched:
                patched.setattr(rollups, "sql_percentiles", lambda: False)
                from_python = _document(owner, name, params)
            # then they are the same
            assert from_sql == from_python, (name, zone, interval)
            assert from_sql["summary"]["count"] > 3


def _document(persona, name, params):
    from django.http import QueryDict

    from tickets.reports.api import report_document

    data = QueryDict(mutable=True)
    data.update(params)
    return report_document(name, data, persona.license)


def test_percentiles_over_many_rows_come_from_the_histogram_within_its_precision(owner, history, settings):
    # given a range above the exact limit (0 here)
    settings.REPORTS_EXACT_PERCENTILE_ROWS = 0
    ragged = report(owner, "responseTime", **{"from": "2026-03-02T08:30:00Z", "to": "2026-03-03T00:00:00Z"})
    assert (
        ragged["summary"]["count"] == 3
    )  # 09:00 from the rows of 08:30-09:00's hour, 11:30 and 14:00 rolled
    body = report(owner, "responseTime", **RANGE)
    # then counts and averages are exact, the median and p90 within a quarter-octave bucket
    summary = body["summary"]
    assert summary["count"] == 3 and summary["averageSeconds"] == 4200.0
    assert summary["medianSeconds"] == pytest.approx(3600, rel=0.09)
    assert summary["p90Seconds"] == pytest.approx(6480, rel=0.09)
    assert report(owner, "resolutionTimePerAgent", **RANGE)["rows"][0]["count"] == 2


def test_rollups_follow_silo_moves_purges_and_deleted_assignees(owner, history):
    from accounts import services as accounts_services
    from tickets import purge
    from tickets.reports import rollups

    a, b, c = history["tickets"]
    with time_machine.travel(at("2026-03-04T10:00"), tick=False):
        services.ticket_update(ticket=b, silo="spam")
        services.ticket_update(ticket=b, silo="tickets")
        services.ticket_rate(ticket=b, score="bad")
        services.ticket_delete(ticket=c)
    assert_rollups_recount(owner.license.pk)
    with time_machine.travel(at("2026-06-01T00:00"), tick=False):
        assert not purge.purge_expired().skipped
    assert not Ticket.objects.filter(pk=c.pk).exists()
    assert_rollups_recount(owner.license.pk)
    with time_machine.travel(at("2026-06-01T00:00"), tick=False):
        accounts_services.team_delete(team=history["team"])
    assert_rollups_recount(owner.license.pk)
    assert rollups.rebuild(owner.license.pk) > 0
    assert_rollups_recount(owner.license.pk)


def test_rollups_follow_team_links_assignees_silo_moves_purges_and_team_deletions(owner, history):
    from accounts import services as accounts_services
    from tickets import purge
    from tickets.reports import rollups
    from tickets.reports.models import ReportRollup

    # given tickets visible to one, two and three teams, re-teamed and reassigned after they were counted
    t1, t2, t3, spam = _teams_history(owner, history)
    a, b, c = history["tickets"]
    assert_rollups_recount(owner.license.pk)
    kept = rollups.stored(owner.license.pk)
    # when a ticket visible to three teams moves to the trash and back, and another is purged
    abc = ticket_at("2026-03-02T20:00", license=owner.license, teams=[t1, t2, t3])
    update_at("2026-03-02T20:30", abc, status="solved", force=True)
    with time_machine.travel(at("2026-03-04T10:00"), tick=False):
        services.ticket_delete(ticket=abc)
        services.ticket_update(ticket=abc, silo="tickets")
        services.ticket_update(ticket=abc, teams=[t3], assignment={"agent": history["y"]})
        services.ticket_delete(ticket=c)
    assert_rollups_recount(owner.license.pk)
    # and when teams are deleted (their links go: in spam too), a ticket comes back from spam and a purge runs
    with time_machine.travel(at("2026-03-05T10:00"), tick=False):
        accounts_services.team_delete(team=t1)
        assert TicketMetrics.objects.get(ticket=spam).teams == ""
        services.ticket_update(ticket=spam, silo="tickets")
    assert_rollups_recount(owner.license.pk)
    with time_machine.travel(at("2026-06-01T00:00"), tick=False):
        assert not purge.purge_expired().skipped
        accounts_services.team_delete(team=t3)
    assert not Ticket.objects.filter(pk=c.pk).exists()
    assert_rollups_recount(owner.license.pk)
    with time_machine.travel(at("2026-06-01T00:00"), tick=False):
        accounts_services.agent_delete(agent=history["y"])
    # then the rollups the writes kept are a recount's, the sets without the deleted teams
    assert_rollups_recount(owner.license.pk)
    members = ReportRollup.objects.filter(license_id=owner.license.pk, metric="teams").exclude(count=0)
    assert set(members.values_list("ident", flat=True)) <= {str(t2.pk), str(owner.license.default_team_id)}
    assert TicketMetrics.objects.get(ticket=a).teams == str(t2.pk)
    assert kept != rollups.stored(owner.license.pk)
    assert rollups.rebuild(owner.license.pk) > 0
    assert_rollups_recount(owner.license.pk)


def test_a_half_hour_zone_or_a_range_off_the_hour_reads_the_rows(owner):
    from tickets.reports import rollups

    ticket_at("2026-03-02T08:00", license=owner.license)
    kathmandu = report(owner, "newTickets", **RANGE, timezone="Asia/Kathmandu", interval="hour")
    assert sum(point["count"] for point in kathmandu["series"]) == 1
    assert not rollups.whole_hour_offsets(
        __import__("zoneinfo").ZoneInfo("Asia/Kathmandu"), at("2026-03-02T00:00"), at("2026-03-03T00:00")
    )


def test_a_units_writes_add_to_the_rollups_at_its_end_and_forget_a_nested_unit_rolled_back(owner, history):
    """A unit of work's writes keep their rollup rows until its flush (tickets.reports.rollups.add): a rule's
    write that cannot apply (a nested unit rolled back) is forgotten with it, a deleted agent's rows moved
    mid-unit include what the unit's writes kept, and a deletion rolled back with its nested unit moves nothing."""
    from accounts import services as accounts_services
    from helpdesk.transactions import unit_of_work
    from tickets.reports import rollups
    from tickets.reports.models import ReportRollup

    a, b, c = history["tickets"]
    z = AgentFactory(license=owner.license, roles=[ROLE_NORMAL])
    rows = ReportRollup.objects.filter(license_id=owner.license.pk)
    with time_machine.travel(at("2026-03-04T10:00"), tick=False):
        with unit_of_work():
            kept = rollups.stored(owner.license.pk)
            services.ticket_update(ticket=c, status="solved", force=True)
            with pytest.raises(RuntimeError), unit_of_work():
                services.ticket_update(ticket=b, silo="spam")
                TicketFactory(license=owner.license)
                raise RuntimeError("the rule cannot apply")
            solved = TicketFactory(license=owner.license, assignment={"agent": z})
            services.ticket_update(ticket=solved, status="solved", force=True)  # stays z's: not given back
            assert rollups.stored(owner.license.pk) == kept  # nothing upserted before the end
            with pytest.raises(RuntimeError), unit_of_work():
                accounts_services.agent_delete(agent=history["y"])
                raise RuntimeError("not deleted after all")
            accounts_services.agent_delete(agent=z)
            gone = TeamFactory(license=owner.license)
            # its set of teams' rows are pending only when the team goes
            TicketFactory(license=owner.license, teams=[gone, history["team"]])
            accounts_services.team_delete(team=gone)
        assert_rollups_recount(owner.license.pk)
    assert rows.filter(dim="a", ident=str(z.pk)).exclude(count=0).count() == 0
    assert rollups.stored(owner.license.pk) != kept
