"""`GET /v1/reports/{name}`: a report of the caller's license as JSON, or with `Accept: text/csv` the same
numbers as CSV. Owners and normal agents read reports; viewers do not."""

from __future__ import annotations

import csv
import io

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response

from helpdesk.api.permissions import WRITERS
from helpdesk.api.renderers import JSONRenderer
from helpdesk.api.schema import RELATIVE_OR_ISO_DATE as DATE
from helpdesk.api.tenancy import LicenseScopedViewSet
from helpdesk.replicas import read_from_replica
from tickets.models import STATUSES, Ticket
from tickets.reports import definitions  # noqa: F401 - tickets' reports registered
from tickets.reports.params import CLOCKS, INTERVALS, RELATED, query_of
from tickets.reports.registry import HOURS, REPORTS
from tickets.reports.selectors import local_iso, run


def report_document(name: str, data, license) -> dict:
    """The API's document of report `name` for `license` with the request's parameters `data`."""
    report = REPORTS.get(name)
    if report is None:
        raise ValidationError({"name": [f"Unknown report '{name}'. Reports: {', '.join(sorted(REPORTS))}."]})
    query = query_of(report, data, license)
    document = {
        "name": report.name,
        "from": local_iso(query.start, query.tz),
        "to": local_iso(query.end, query.tz),
        "interval": "hour" if report.layout == HOURS else query.interval,
        "timezone": query.tz.key,
    }
    return document | run(report, query)


class ReportCSVRenderer(BaseRenderer):
    """A report as CSV: one line per bucket or row, in the JSON's order, then `total` with the summary."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        lines = io.StringIO()
        writer = csv.writer(lines, lineterminator="\n")
        points = data.get("series", data.get("rows", []))
        first = next(iter(points[0])) if points else "start"
        names = [key for key in data["summary"]]
        writer.writerow([first, *names])
        for point in points:
            writer.writerow([_cell(point[first]), *(_cell(point[key]) for key in names)])
        writer.writerow(["total", *(_cell(data["summary"][key]) for key in names)])
        return lines.getvalue().encode()


def _cell(value):
    if isinstance(value, dict):  # a source's {"count"}
        value = value["count"]
    return "" if value is None else value


_VALUES = {
    "count": {"type": "integer"},
    "averageSeconds": {"type": "number", "nullable": True},
    "medianSeconds": {"type": "number", "nullable": True},
    "p90Seconds": {"type": "number", "nullable": True},
    "good": {"type": "integer"},
    "bad": {"type": "integer"},
    "email": {"type": "object", "properties": {"count": {"type": "integer"}}},
}
_VALUES_SCHEMA = {
    "type": "object",
    "description": "Counting reports: `count`; time reports: `count`, `averageSeconds`, `medianSeconds`, "
    "`p90Seconds` (null without any); rating reports: `good`, `bad`, `count`; ticketSources24: "
    "`{email|api|form|admin|system: {count}}`.",
    "properties": _VALUES,
}
REPORT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "from": {"type": "string", "format": "date-time"},
        "to": {"type": "string", "format": "date-time"},
        "interval": {"type": "string", "enum": INTERVALS},
        "timezone": {"type": "string"},
        "summary": _VALUES_SCHEMA,
        "series": {
            "type": "array",
            "description": "Per bucket (`start`, in the caller's zone) or, for the …24 reports, per `hour` 0-23.",
            "items": {
                "type": "object",
                "properties": {
                    "start": {"type": "string", "format": "date-time"},
                    "hour": {"type": "integer"},
                },
                "additionalProperties": True,
            },
        },
        "rows": {
            "type": "array",
            "description": "…PerAgent / …PerTeam: one row per agent or team, busiest first.",
            "items": {
                "type": "object",
                "properties": {
                    "agentID": {"type": "string", "format": "uuid", "nullable": True},
                    "teamID": {"type": "string", "format": "uuid", "nullable": True},
                },
                "additionalProperties": True,
            },
        },
    },
    "required": ["name", "from", "to", "interval", "timezone", "summary"],
}
_EXAMPLE = {
    "name": "responseTime",
    "from": "2026-03-23T00:00:00+01:00",
    "to": "2026-03-30T00:00:00+02:00",
    "interval": "day",
    "timezone": "Europe/Warsaw",
    "summary": {"count": 3, "averageSeconds": 2400.0, "medianSeconds": 1800.0, "p90Seconds": 4680.0},
    "series": [
        {"start": "2026-03-23T00:00:00+01:00", "count": 2, "averageSeconds": 1200.0, "medianSeconds": 1200.0,
         "p90Seconds": 1680.0},
        {"start": "2026-03-24T00:00:00+01:00", "count": 0, "averageSeconds": None, "medianSeconds": None,
         "p90Seconds": None},
    ],
}  # fmt: skip


def _parameters():
    names = sorted(REPORTS)
    uuid_array = {"type": "array", "maxItems": 100, "items": {"type": "string", "format": "uuid"}}
    return [
        OpenApiParameter("name", str, OpenApiParameter.PATH, enum=names, description="The report."),
        OpenApiParameter(
            "from",
            str,
            description="RelativeDate, inclusive (default `-6D`: 7 days with today).",
            pattern=DATE,
        ),
        OpenApiParameter(
            "to", str, description="RelativeDate, exclusive (default `+1D`: the next midnight).", pattern=DATE
        ),
        OpenApiParameter(
            "timezone", str, description="IANA zone where days, weeks and months are cut (UTC)."
        ),
        OpenApiParameter("interval", str, enum=INTERVALS, description="Bucket of `series` (default `day`)."),
        OpenApiParameter(
            "status",
            str,
            enum=STATUSES,
            description="The status the `status*` reports count (required there).",
        ),
        OpenApiParameter(
            "clock",
            str,
            enum=CLOCKS,
            description="Time reports only (`responseTime*`, `resolutionTime*`): `calendar` (default) seconds, or "
            "`business`: only tickets under an SLA policy, in seconds of its business hours (24/7: calendar).",
        ),
        *(
            OpenApiParameter(name, uuid_array, description=f"Only tickets of these {what}.")
            for name, what in zip(RELATED, ("teams", "assignees", "tags (all of them)"), strict=True)
        ),
    ]


class ReportViewSet(LicenseScopedViewSet):
    """The reports: declarations in tickets.reports.definitions (and templates_app/reports.py)."""

    queryset = Ticket.objects.none()  # none read through the base: a report scopes its own rows by license
    lookup_field = lookup_url_kwarg = "name"
    renderer_classes = [JSONRenderer, ReportCSVRenderer]
    roles = {"retrieve": WRITERS}

    @extend_schema(
        operation_id="reports_retrieve",
        summary="Get report",
        description="A report of the caller's license over a half-open range: a `series` of buckets (or of the "
        "24 hours of the day), or `rows` per agent or team, and the `summary` of the whole range. "
        "`Accept: text/csv` (or `format=csv`) gives the same numbers as CSV. Owners and normal agents only.",
        parameters=_parameters(),
        responses={
            200: OpenApiResponse(
                response=REPORT_SCHEMA, examples=[OpenApiExample("responseTime per day", value=_EXAMPLE)]
            )
        },
    )
    @read_from_replica
    def retrieve(self, request, name=None):
        return Response(report_document(name, request.query_params, request.license))

    def finalize_response(self, request, response, *args, **kwargs):
        if response.status_code >= 400:  # errors keep the contract's JSON shape, whatever was asked
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)
