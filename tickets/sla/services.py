"""Writes of business hours and SLA policies (owners manage them). Everything a body can get wrong is a 400
naming the field: an unknown time zone, an interval that ends before it starts or overlaps another, more than
MAX_HOLIDAYS holidays, an unknown priority key, minutes below one, a businessHoursID of another license; a
policy's conditions are the rules' (tickets.rules.conditions) without the event, time and SLA ones."""

from __future__ import annotations

import functools
import zoneinfo
from datetime import date

from accounts.models import License
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import Conflict, Invalid, field_error
from helpdesk.transactions import unit_of_work
from tickets.models import PRIORITIES
from tickets.rules import conditions as rule_conditions
from tickets.sla import clock
from tickets.sla.models import BusinessHours, SlaPolicy
from tickets.sla.tracker import TARGET_KEYS

MAX_HOLIDAYS = 1000
MAX_INTERVALS = 10  # per day
MAX_MINUTES = 10 * 366 * 24 * 60
MAX_POLICIES = 100
# A policy applies to a ticket as it stands: no write's event, no time, not its own breaches.
NOT_FOR_POLICIES = ("event", "hoursSince", "slaBreached")
PRIORITY_KEYS = tuple(str(p) for p in PRIORITIES)


def _error(path: list, message: str) -> Invalid:
    """A 400 naming the field and where inside it: details {"week": {"mon": {"0": [message]}}}."""
    shown = path[0] + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path[1:])
    details: object = [message]
    for part in reversed(path[1:]):
        details = {str(part): details}
    return Invalid(f"Invalid value for '{shown}': {message}", details={path[0]: details})


@functools.cache
def time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _timezone(name) -> str:
    if name not in time_zones():
        raise field_error("timezone", f"Unknown time zone '{name}': an IANA name such as Europe/Warsaw.")
    return name


def _week(week) -> dict:
    if not isinstance(week, dict):
        raise field_error("week", "Expected an object of weekdays.")
    out = {}
    for day, intervals in week.items():
        if day not in clock.DAYS:
            raise _error(["week", day], f"Unknown weekday; one of {', '.join(clock.DAYS)}.")
        if not isinstance(intervals, list) or len(intervals) > MAX_INTERVALS:
            raise _error(["week", day], f"Expected a list of at most {MAX_INTERVALS} intervals.")
        spans = []
        for index, interval in enumerate(intervals):
            where = ["week", day, index]
            if not (isinstance(interval, list) and len(interval) == 2):
                raise _error(where, 'Expected ["HH:MM", "HH:MM"].')
            try:
                start, end = clock.minutes(interval[0]), clock.minutes(interval[1])
            except ValueError as error:
                raise _error(where, str(error)) from None
            if end <= start:
                raise _error(where, "The interval ends before it starts (split a night shift at 24:00).")
            spans.append((start, end, index))
        spans.sort()
        for (_s, end, _i), (start, _e, index) in zip(spans, spans[1:], strict=False):
            if start < end:
                raise _error(["week", day, index], "Intervals overlap.")
        out[day] = [list(interval) for interval in sorted(intervals)]
    if not any(out.values()):
        raise field_error("week", "At least one working interval is needed.")
    return out


def _holidays(holidays) -> list[str]:
    if not isinstance(holidays, list):
        raise field_error("holidays", "Expected a list of dates.")
    if len(holidays) > MAX_HOLIDAYS:
        raise field_error("holidays", f"At most {MAX_HOLIDAYS} holidays.")
    out = set()
    for day in holidays:
        try:
            date.fromisoformat(day)
        except (TypeError, ValueError):
            raise field_error("holidays", f"'{day}' is not a date (YYYY-MM-DD).") from None
        if not (isinstance(day, str) and len(day) == 10):
            raise field_error("holidays", f"'{day}' is not a date (YYYY-MM-DD).")
        out.add(day)
    return sorted(out)


@unit_of_work
def business_hours_create(*, license: License, name: str, timezone: str, week, holidays=()) -> BusinessHours:
    hours = BusinessHours(
        license=license,
        name=name,
        timezone=_timezone(timezone),
        week=_week(week),
        holidays=_holidays(list(holidays)),
    )
    stamp_create(hours)
    hours.save()
    return hours


@unit_of_work
def business_hours_update(*, business_hours: BusinessHours, **fields) -> BusinessHours:
    checks = {"name": lambda v: v, "timezone": _timezone, "week": _week, "holidays": _holidays}
    for name, value in fields.items():
        setattr(business_hours, name, checks[name](value))
    stamp_update(business_hours)
    business_hours.save()
    return business_hours


@unit_of_work
def business_hours_delete(*, business_hours: BusinessHours) -> None:
    used = SlaPolicy.objects.filter(business_hours=business_hours).first()
    if used is not None:
        raise Conflict(f"The SLA policy '{used.name}' counts in these business hours.", code="in_use")
    business_hours.delete()


def _conditions(license: License, value) -> list[dict]:
    try:
        normalized = rule_conditions.validate(license=license, triggers=value)
    except Invalid as error:
        details = error.details or {}
        raise Invalid(
            error.message.replace("'triggers", "'conditions", 1),
            code=error.code,
            details={"conditions": details.get("triggers", details)},
        ) from None
    for index, condition in enumerate(normalized):
        if condition["type"] in NOT_FOR_POLICIES:
            message = f"A policy's condition cannot be of type {condition['type']}."
            raise Invalid(
                f"Invalid value for 'conditions[{index}].type': {message}",
                details={"conditions": {str(index): {"type": [message]}}},
            )
    return normalized


def _targets(targets) -> dict:
    if not isinstance(targets, dict):
        raise field_error("targets", "Expected an object of priorities.")
    out = {}
    for priority, row in targets.items():
        field = ["targets", priority]
        if priority not in PRIORITY_KEYS:
            raise _error(field, f"Unknown priority; one of {', '.join(PRIORITY_KEYS)}.")
        if not isinstance(row, dict):
            raise _error(field, "Expected an object of minutes.")
        unknown = sorted(set(row) - set(TARGET_KEYS.values()))
        if unknown:
            raise _error([*field, unknown[0]], "Unknown target.")
        out[priority] = {}
        for key in TARGET_KEYS.values():
            minutes = row.get(key)
            if minutes is not None and (
                isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= MAX_MINUTES
            ):
                raise _error([*field, key], f"Expected whole minutes from 1 to {MAX_MINUTES}, or null.")
            out[priority][key] = minutes
    return out


def _business_hours(license: License, business_hours_id) -> BusinessHours | None:
    if business_hours_id is None:
        return None
    found = BusinessHours.objects.filter(license=license, pk=business_hours_id).first()
    if found is None:
        raise field_error("businessHoursID", f"'{business_hours_id}' does not exist in this license.")
    return found


@unit_of_work
def sla_policy_create(
    *, license: License, name: str, targets, conditions=(), ordering: int = 0, business_hours_id=None
) -> SlaPolicy:
    policy = SlaPolicy(
        license=license,
        name=name,
        ordering=ordering,
        conditions=_conditions(license, list(conditions)),
        targets=_targets(targets),
        business_hours=_business_hours(license, business_hours_id),
    )
    if SlaPolicy.objects.for_license(license).count() >= MAX_POLICIES:
        raise Conflict(f"The limit of {MAX_POLICIES} SLA policies is reached.", code="limit_sla_policies")
    stamp_create(policy)
    policy.save()
    return policy


_UNSET = object()


@unit_of_work
def sla_policy_update(
    *, sla_policy: SlaPolicy, conditions=None, targets=None, business_hours_id=_UNSET, **fields
) -> SlaPolicy:
    if conditions is not None:
        sla_policy.conditions = _conditions(sla_policy.license, conditions)
    if targets is not None:
        sla_policy.targets = _targets(targets)
    if business_hours_id is not _UNSET:
        sla_policy.business_hours = _business_hours(sla_policy.license, business_hours_id)
    for name, value in fields.items():
        if name not in ("name", "ordering"):
            raise TypeError(f"unknown SLA policy field {name}")
        setattr(sla_policy, name, value)
    stamp_update(sla_policy)
    sla_policy.save()
    return sla_policy


@unit_of_work
def sla_policy_delete(*, sla_policy: SlaPolicy) -> None:
    sla_policy.delete()
