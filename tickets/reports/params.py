"""The reports' query parameters: an allowlist form, each bad value a 400 naming its parameter.

`from`/`to` are RelativeDates (helpdesk.api.relative_dates) resolved in `timezone` against one clock reading;
the range is half-open and by default the last 7 days (today and the 6 days before, in the caller's zone).
IDs of teams, agents and tags must be the caller's license's.
"""

from __future__ import annotations

import datetime
import zoneinfo

from django import forms
from django.utils import timezone as dj_timezone
from rest_framework.exceptions import ValidationError

from accounts.models import Agent, Team
from helpdesk.api.filtersets import UNKNOWN
from helpdesk.api.relative_dates import RelativeDateError, RelativeDateField, TimezoneField, parse
from tickets.filters import ChoiceWithDefault, ListParam, _uuid
from tickets.models import STATUSES, Tag
from tickets.reports.registry import SERIES, Report
from tickets.reports.selectors import Query

INTERVALS = ["hour", "day", "week", "month"]
# The time reports' seconds: calendar, or business (tickets under an SLA policy, in its business hours).
CLOCKS = ["calendar", "business"]
DEFAULT_FROM, DEFAULT_TO = "-6D", "+1D"
# An hourly report spans at most 2 years (17,568 points); the other intervals at most as many points.
MAX_POINTS = 732 * 24
POINT_SECONDS = {"hour": 3600, "day": 86400, "week": 7 * 86400, "month": 28 * 86400}
RELATED = {"teamIDs[]": Team, "agentIDs[]": Agent, "tagIDs[]": Tag}


def _form_class():
    fields = {
        "from": RelativeDateField(required=False),
        "to": RelativeDateField(required=False),
        "timezone": TimezoneField(required=False),
        "interval": ChoiceWithDefault(choices=INTERVALS, default="day"),
        "status": ChoiceWithDefault(choices=STATUSES),
        "clock": ChoiceWithDefault(choices=CLOCKS, default="calendar"),
        **{name: ListParam(item=_uuid) for name in RELATED},
    }
    return type("ReportParamsForm", (forms.Form,), fields)


ReportParamsForm = _form_class()
# `format` (csv|json) is DRF's: an alternative to the Accept header, for links. `clock` is the time reports' only:
# another report refuses it, naming it (as `status` on a report that is not a status report).
PARAMS = frozenset(ReportParamsForm.base_fields) | {"format"}


def query_of(report: Report, data, license, *, now: datetime.datetime | None = None) -> Query:
    """The report's Query from the request's parameters; ValidationError (400) naming the bad one."""
    unknown = sorted(set(data.keys()) - PARAMS)
    if unknown:
        raise ValidationError({name: [UNKNOWN] for name in unknown})
    if "clock" in data and not report.business_seconds:
        raise ValidationError({"clock": ["Only the time reports take a clock."]})
    form = ReportParamsForm(data=data)
    if not form.is_valid():
        raise ValidationError({name: list(errors) for name, errors in form.errors.items()})
    for name in form.fields:
        if name in data and not str(data.get(name, "")).strip():
            raise ValidationError({name: ["This parameter may not be empty."]})
    clean = form.cleaned_data
    if report.needs_status and not clean["status"]:
        raise ValidationError(
            {"status": [f"The {report.name} report needs a status: {', '.join(STATUSES)}."]}
        )
    if not report.needs_status and clean["status"]:
        raise ValidationError({"status": ["Only the status reports take a status."]})
    tz = clean["timezone"] or zoneinfo.ZoneInfo("UTC")
    now = now or dj_timezone.now()
    try:
        start = (clean["from"] or parse(DEFAULT_FROM)).resolve(tz=tz, now=now)
        end = (clean["to"] or parse(DEFAULT_TO)).resolve(tz=tz, now=now)
    except RelativeDateError as error:  # pragma: no cover - the form resolved them once already
        raise ValidationError({"from": [str(error)]}) from None
    if end <= start:
        raise ValidationError({"to": ["'to' must be after 'from' (the range is half-open: from <= t < to)."]})
    interval = clean["interval"]
    if report.layout == SERIES and (end - start).total_seconds() / POINT_SECONDS[interval] > MAX_POINTS:
        raise ValidationError(
            {
                "interval": [
                    f"Too many {interval}s in this range (at most {MAX_POINTS}: 2 years of hours); "
                    "choose a longer interval or a shorter range."
                ]
            }
        )
    ids = {name: tuple(clean[name] or ()) for name in RELATED}
    for name, model in RELATED.items():
        if ids[name]:
            found = set(model.objects.filter(license=license, pk__in=ids[name]).values_list("pk", flat=True))
            missing = [str(pk) for pk in ids[name] if pk not in found]
            if missing:
                raise ValidationError({name: [f"'{missing[0]}' does not exist in this license."]})
    return Query(
        license_id=license.pk,
        start=start,
        end=end,
        tz=tz,
        interval=interval,
        team_ids=ids["teamIDs[]"],
        agent_ids=ids["agentIDs[]"],
        tag_ids=ids["tagIDs[]"],
        status=clean["status"] or "",
        clock=clean["clock"],
    )
