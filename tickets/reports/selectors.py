"""A report's numbers: the declared rows of the caller's license in the range, filtered through their tickets,
aggregated per bucket in the database (GROUP BY the bucket cut in the caller's time zone), plus the summary.

One statement per report (the buckets; the summary is their sum), two for the time reports (percentiles do not
add up), each an index range scan of the license's rows in the range. Percentiles: `percentile_cont` on
PostgreSQL; elsewhere (SQLite) the seconds of the range are read and interpolated the same way in Python.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import zoneinfo

from django.db import connection
from django.db.models import Aggregate, Avg, Count, Exists, F, FloatField, IntegerField, OuterRef, Q, Value
from django.db.models.functions import ExtractHour, Trunc

from tickets.models import Ticket, TicketTeam
from tickets.reports import rollups
from tickets.reports.registry import AGENTS, COUNT, HOURS, RATING, SERIES, SOURCE_NAMES, SOURCES, TIME, Report

REPORTED_SILOS = ["tickets", "archive"]  # spam and trash leave the reports, as a purged ticket does
UTC = datetime.UTC


@dataclasses.dataclass(frozen=True)
class Query:
    license_id: int
    start: datetime.datetime  # inclusive, aware
    end: datetime.datetime  # exclusive, aware
    tz: zoneinfo.ZoneInfo
    interval: str = "day"
    team_ids: tuple = ()
    agent_ids: tuple = ()
    tag_ids: tuple = ()
    status: str = ""
    license_ids: tuple = ()  # several licenses at once (the admin dashboard): counts_by_license
    clock: str = "calendar"  # "business": a time report of the business seconds, of the rows that have them


class PercentileCont(Aggregate):
    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


def percentile(values: list[float], fraction: float) -> float | None:
    """percentile_cont's linear interpolation over sorted `values`."""
    if not values:
        return None
    position = (len(values) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def run(report: Report, query: Query) -> dict:
    """The report's `summary` and its `series` or `rows`, as the API shows them: from the rollups when they
    cover the query (tickets.reports.rollups), else from the rows."""
    if query.clock == "business":  # the same report of the business seconds (rows without any left out)
        report = dataclasses.replace(report, seconds=report.business_seconds)
    if rollups.covers(report, query):
        starts = [start for _, start in buckets(query)] if report.layout == SERIES else []
        rolled = rollups.run(report, query, starts, lambda start, end: _edge_parts(report, query, start, end))
        if rolled is not None:
            return shaped(report, query, *rolled)
    rows = _filtered(report, query)
    if report.layout == SERIES:
        found = _aggregate(report, rows, Trunc(report.at, query.interval, tzinfo=query.tz))
    elif report.layout == HOURS:
        found = _aggregate(report, rows, ExtractHour(report.at, tzinfo=query.tz))
    else:
        found = _aggregate(report, rows, F(report.group))
    summary = None
    if report.family == TIME:  # percentiles do not add up: the range's own statement
        summary = next(iter(_aggregate(report, rows, None).values()), None) or empty(report)
    return shaped(report, query, found, summary)


def _edge_parts(report: Report, query: Query, start, end) -> dict:
    """The rows of [start, end) (part of an hour) as the rollups' parts: {bucket key: [(key, n, seconds)]}."""
    rows = _filtered(report, dataclasses.replace(query, start=start, end=end))
    if report.layout == SERIES:
        rows = rows.annotate(_key=Trunc(report.at, query.interval, tzinfo=query.tz))
    elif report.layout == HOURS:
        rows = rows.annotate(_key=ExtractHour(report.at, tzinfo=query.tz))
    else:
        rows = rows.annotate(_key=F(report.group))
    parts: dict = {}
    if report.family == TIME:
        found = (
            (key, str(rollups.bucket(seconds)), 1, seconds)
            for key, seconds in rows.values_list("_key", report.seconds)
        )
    else:
        part = {RATING: "rating_score", SOURCES: "source"}.get(report.family)
        values = rows.values("_key", *([part] if part else [])).annotate(n=Count("pk")).order_by()
        found = ((row["_key"], row[part] if part else "", row["n"], 0.0) for row in values)
    for key, part_key, n, seconds in found:
        if report.layout not in (SERIES, HOURS):
            key = "" if key is None else str(key)  # the rollups' ident
        parts.setdefault(key, []).append((part_key, n, seconds))
    return parts


def _wall_of(key: datetime.datetime, tz) -> datetime.datetime:
    return (
        key if key.tzinfo is None else key.astimezone(tz).replace(tzinfo=None)
    )  # the rollups' are wall times


def shaped(report: Report, query: Query, found: dict, summary: dict | None) -> dict:
    """The document of {bucket key: values}: series keys are the database's bucket starts (aware), hours 0-23,
    rows agent or team IDs; `summary` None: the sum of the buckets (every row is in exactly one)."""
    if report.layout == SERIES:
        by_wall = {_wall_of(key, query.tz): values for key, values in found.items()}
        result = {
            "series": [
                {"start": local_iso(start, query.tz), **(by_wall.get(wall) or empty(report))}
                for wall, start in buckets(query)
            ]
        }
    elif report.layout == HOURS:
        result = {"series": [{"hour": h, **(found.get(h) or empty(report))} for h in range(24)]}
    else:
        key = "agentID" if report.layout == AGENTS else "teamID"
        ordered = sorted(found.items(), key=lambda item: (-item[1]["count"], str(item[0])))
        result = {"rows": [{key: ident, **values} for ident, values in ordered]}
    if summary is None:
        summary = _sum(report, found.values())
    return {"summary": summary, **result}


def _sum(report: Report, values_of_buckets) -> dict:
    total = empty(report)
    for values in values_of_buckets:
        for name, value in values.items():
            if isinstance(value, dict):  # a source's {"count"}
                total[name]["count"] += value["count"]
            else:
                total[name] += value
    return total


def counts_by_license(report: Report, query: Query) -> dict[tuple[int, datetime.datetime], int]:
    """{(license ID, bucket's wall start): rows counted} of `query.license_ids`, in one statement: the admin
    dashboard's numbers are the reports' own."""
    rows = _filtered(report, query).annotate(_key=Trunc(report.at, query.interval, tzinfo=query.tz))
    return {
        (row["license_id"], row["_key"].astimezone(query.tz).replace(tzinfo=None)): row["n"]
        for row in rows.values("license_id", "_key").annotate(n=Count("pk")).order_by()
    }


def _filtered(report: Report, query: Query):
    licenses = Q(license_id__in=query.license_ids) if query.license_ids else Q(license_id=query.license_id)
    rows = report.rows({"status": query.status}).filter(
        licenses, **{f"{report.at}__gte": query.start, f"{report.at}__lt": query.end}
    )
    prefix = f"{report.ticket}__" if report.ticket else ""
    ticket_ref = f"{report.ticket}_id" if report.ticket else "pk"
    filtered = bool(query.team_ids or query.agent_ids or query.tag_ids)
    silos = Q(**{f"{report.silo or prefix + 'silo'}__in": REPORTED_SILOS})
    if report.ticket_optional and not filtered:
        silos |= Q(**{f"{report.ticket}__isnull": True})
    rows = rows.filter(silos)
    if query.clock == "business":
        rows = rows.filter(**{f"{report.business_seconds}__isnull": False})
    if query.agent_ids:
        rows = rows.filter(**{f"{prefix}assignment_agent_id__in": query.agent_ids})
    if query.team_ids:
        rows = rows.filter(
            Exists(TicketTeam.objects.filter(ticket_id=OuterRef(ticket_ref), team_id__in=query.team_ids))
        )
    tags = Ticket.tags.through
    for tag_id in query.tag_ids:  # every tag, as the search's tagIDs[]
        rows = rows.filter(Exists(tags.objects.filter(ticket_id=OuterRef(ticket_ref), tag_id=tag_id)))
    return rows


def _aggregate(report: Report, rows, key) -> dict:
    """{bucket key: values}; `key` None: the summary, one bucket."""
    grouped = rows.annotate(_key=key if key is not None else Value(0, output_field=IntegerField()))
    if report.family == TIME and connection.vendor != "postgresql":
        return _time_in_python(report, grouped)
    if report.family == SOURCES:
        counts: dict = {}
        for row in grouped.values("_key", "source").annotate(n=Count("pk")).order_by():
            values = counts.setdefault(row["_key"], empty(report))
            source = row["source"] if row["source"] in SOURCE_NAMES else "system"
            values[source]["count"] += row["n"]
        return counts
    aggregates = {"count": Count("pk")}
    if report.family == RATING:
        aggregates |= {"good": Count("pk", filter=Q(rating_score="good")), "bad": Count("pk", filter=Q(rating_score="bad"))}  # fmt: skip
    elif report.family == TIME:
        aggregates |= {
            "average": Avg(report.seconds),
            "median": PercentileCont(report.seconds, 0.5),
            "p90": PercentileCont(report.seconds, 0.9),
        }
    found = {}
    for row in grouped.values("_key").annotate(**aggregates).order_by():
        found[row["_key"]] = _values(report, row)
    return found


def _time_in_python(report: Report, grouped) -> dict:
    seconds: dict = {}
    for key, value in grouped.values_list("_key", report.seconds).order_by():
        seconds.setdefault(key, []).append(value)
    found = {}
    for key, values in seconds.items():
        values.sort()
        row = {"count": len(values), "average": sum(values) / len(values)}
        row |= {"median": percentile(values, 0.5), "p90": percentile(values, 0.9)}
        found[key] = _values(report, row)
    return found


def _values(report: Report, row: dict) -> dict:
    if report.family == RATING:
        return {"good": row["good"], "bad": row["bad"], "count": row["count"]}
    if report.family == TIME:
        return {
            "count": row["count"],
            "averageSeconds": _seconds(row["average"]),
            "medianSeconds": _seconds(row["median"]),
            "p90Seconds": _seconds(row["p90"]),
        }
    return {"count": row["count"]}


def _seconds(value) -> float | None:
    return None if value is None else round(float(value), 1)


def empty(report: Report) -> dict:
    if report.family == RATING:
        return {"good": 0, "bad": 0, "count": 0}
    if report.family == TIME:
        return {"count": 0, "averageSeconds": None, "medianSeconds": None, "p90Seconds": None}
    if report.family == SOURCES:
        return {name: {"count": 0} for name in SOURCE_NAMES}
    assert report.family == COUNT
    return {"count": 0}


# --- buckets in the caller's time zone -----------------------------------------------------------------------


def _wall(moment: datetime.datetime, tz) -> datetime.datetime:
    return moment.astimezone(tz).replace(tzinfo=None)


def _aware(wall: datetime.datetime, tz) -> datetime.datetime:
    """A wall time -> aware UTC: a skipped time lands after the gap, a repeated one takes its first occurrence."""
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)


def buckets(query: Query):
    """(wall key, aware start) of every bucket that meets [start, end), in order. Days, weeks (from Monday) and
    months start at local midnight (23 or 25 hours long across a DST change); hours are elapsed hours, and the
    hour that repeats when clocks fall back is one bucket, as the database's cut makes it."""
    tz, interval = query.tz, query.interval
    if interval == "hour":
        moment = _aware(_wall(query.start, tz).replace(minute=0, second=0, microsecond=0), tz)
        if moment > query.start:  # the start fell in a repeated hour's second occurrence
            moment -= datetime.timedelta(hours=1)
        seen = set()
        while moment < query.end:
            wall = _wall(moment, tz).replace(minute=0, second=0, microsecond=0)
            if wall not in seen:
                seen.add(wall)
                yield wall, _aware(wall, tz)
            moment += datetime.timedelta(hours=1)
        return
    wall = _wall(query.start, tz).replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "week":
        wall -= datetime.timedelta(days=wall.weekday())
    elif interval == "month":
        wall = wall.replace(day=1)
    while _aware(wall, tz) < query.end:
        yield wall, _aware(wall, tz)
        if interval == "month":
            wall = wall.replace(year=wall.year + wall.month // 12, month=wall.month % 12 + 1)
        else:
            wall += datetime.timedelta(days=7 if interval == "week" else 1)


def local_iso(moment: datetime.datetime, tz) -> str:
    """An instant as the caller reads it: ISO 8601 with the zone's offset (`Z` in UTC)."""
    text = moment.astimezone(tz).isoformat(timespec="seconds")
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text
