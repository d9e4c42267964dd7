"""RelativeDate: the one parser for every date parameter of the API (ticket search, audit log).

Parameters
----------
A RelativeDate parameter accepts exactly one of:

* a relative date ``[-+]<number><unit>`` (the whole value, no spaces; ``number`` is 0..9999999, decimal digits):

  ======  ===========================================================================================
  unit    meaning
  ======  ===========================================================================================
  ``n``   minutes from now (``-10n``: ten minutes ago)
  ``h``   hours from now (exact hours of elapsed time)
  ``d``   days from now, **24 hours each** (``-2d`` is exactly 48 hours before now, as the spec says)
  ``m``   calendar months from now, in the request's time zone, same wall-clock time, the day clamped
          to the end of a shorter month (Mar 31 ``-1m`` -> Feb 28, or Feb 29 in a leap year)
  ``H``   start of the current hour, then moved by ``number`` hours (``-0H``: start of this hour)
  ``D``   last midnight, then moved by ``number`` calendar days (``-0D``: last midnight,
          ``-1D``: the midnight before, ``+1D``: next midnight)
  ``M``   start of the current month, then moved by ``number`` months (``-0M``: start of this month,
          ``-1M``: start of last month)
  ======  ===========================================================================================

  Uppercase units truncate in the wall time of the ``timezone`` parameter (an IANA name such as
  ``Europe/Warsaw``; default ``UTC``). ``+0X`` and ``-0X`` mean the same.
* an ISO 8601 date ``2026-04-30``: the start of that day in ``timezone``;
* an ISO 8601 timestamp ``2026-04-30T22:02:08Z`` / ``2026-04-30T22:02:08.901+02:00``; a timestamp without an
  offset is wall time in ``timezone``.

Anything else (empty, ``2d`` without a sign, ``-2x``, ``-d``, a number so large the date leaves years 1..9999) is
rejected with `RelativeDateError` (a ``ValueError``), which the filter turns into a 400 naming the parameter.
Every result is an aware datetime in UTC.

Daylight saving time
--------------------
Lowercase ``n``/``h``/``d`` are elapsed time: ``-1d`` is always 24 hours ago, even across a DST change.
Uppercase ``D``/``M`` are calendar positions: they are computed in local wall time and then converted, so on the
day after a change ``-0D`` is local midnight and ``-1D`` the local midnight before it, 23 or 25 hours earlier.
``H`` truncates to the local hour and then moves by elapsed hours (a wall-clock hour that does not exist would
otherwise be ambiguous). A wall time that falls into a DST gap (a midnight skipped by the change, a ``m`` move
onto a skipped time) is read with the offset before the change, i.e. it lands on the first instant after the gap;
an ambiguous wall time (fall back) takes its first occurrence.

Ranges are half-open: ``...From`` is inclusive (``>=``) and ``...To`` is exclusive (``<``), so ``createdDateFrom=-1D``
``&createdDateTo=-0D`` is exactly yesterday in the given time zone.

Public names
------------
``resolve(value, *, tz=UTC, now=None)``  the pure function (str -> aware UTC datetime)
``parse(value)``                          syntax check only, returns a `RelativeDate` to ``.resolve(tz=..., now=...)``
``RelativeDateError``                     raised for any invalid value or time zone
``zone(name)``                            an IANA name -> ZoneInfo, or RelativeDateError
``RelativeDateFilter``                    django-filter Filter (``field_name``, ``lookup_expr="gte"|"lt"``)
``TimezoneFilter``                        django-filter Filter for the ``timezone`` parameter (filters nothing)
``RelativeDateRange``                     declares a ``<name>From``/``<name>To`` pair in one FilterSet line
"""

from __future__ import annotations

import calendar
import datetime
import functools
import re
import zoneinfo
from dataclasses import dataclass

import django_filters
from django import forms
from django.utils import timezone as dj_timezone
from drf_spectacular.drainage import set_override
from rest_framework.exceptions import ValidationError

UTC = datetime.UTC
MAX_NUMBER = 9_999_999

_RELATIVE = re.compile(r"([+-])(\d+)([nhHdDmM])")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|z|[+-]\d{2}:?\d{2})?")

SYNTAX_HELP = (
    "expected a relative date [-+]<number><unit> with unit n, h, d, m, H, D or M (e.g. -2d, -0D, -1M, +1m), "
    "an ISO 8601 date (2026-04-30) or timestamp (2026-04-30T22:02:08Z)"
)


class RelativeDateError(ValueError):
    """An invalid RelativeDate or time zone; the message is safe to show to API clients."""


@functools.cache
def zone_names() -> frozenset[str]:
    """The IANA names the `timezone` parameter accepts (the system's zones plus the tzdata package's)."""
    return frozenset(zoneinfo.available_timezones() - {"localtime", "posixrules", "Factory"})


def zone(name: str | None) -> zoneinfo.ZoneInfo:
    """The IANA time zone `name` (None or "" -> UTC); RelativeDateError when unknown."""
    if not name:
        return zoneinfo.ZoneInfo("UTC")
    if not isinstance(name, str) or name not in zone_names():
        raise RelativeDateError(f"Unknown time zone '{name}': expected an IANA name such as Europe/Warsaw.")
    return zoneinfo.ZoneInfo(name)


def _local(wall: datetime.datetime, tz: datetime.tzinfo) -> datetime.datetime:
    """A naive wall time in `tz` -> aware UTC; gaps land after the change, ambiguous times take the first one."""
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)


def _add_months(wall: datetime.datetime, months: int) -> datetime.datetime:
    index = wall.year * 12 + (wall.month - 1) + months
    year, month = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise OverflowError
    day = min(wall.day, calendar.monthrange(year, month + 1)[1])
    return wall.replace(year=year, month=month + 1, day=day)


@dataclass(frozen=True)
class RelativeDate:
    """A syntactically valid RelativeDate, not yet resolved (resolving needs the time zone and the clock)."""

    text: str
    sign: int = 0
    number: int = 0
    unit: str = ""
    absolute: datetime.datetime | datetime.date | None = None

    @property
    def moves_with_the_clock(self) -> bool:
        """Whether its moment moves with every reading of the clock (`n`, `h`, `d`, `m`: elapsed time or the same
        wall-clock time), so that no two requests resolve it alike; not a truncated unit nor a date."""
        return self.absolute is None and self.unit in ("n", "h", "d", "m")

    def resolve(self, *, tz: datetime.tzinfo | str | None = None, now: datetime.datetime | None = None):
        """The aware UTC datetime this value means at `now` (default: the current time) in `tz` (default UTC)."""
        if not isinstance(tz, datetime.tzinfo):
            tz = zone(tz)
        now = (now or dj_timezone.now()).astimezone(UTC)
        try:
            return self._resolve(tz, now)
        except (OverflowError, ValueError):
            raise RelativeDateError(
                f"'{self.text}' is out of range (dates must stay within years 1..9999)."
            ) from None

    def _resolve(self, tz: datetime.tzinfo, now: datetime.datetime) -> datetime.datetime:
        if isinstance(self.absolute, datetime.datetime):
            value = self.absolute
            return _local(value, tz) if value.tzinfo is None else value.astimezone(UTC)
        if isinstance(self.absolute, datetime.date):
            return _local(datetime.datetime.combine(self.absolute, datetime.time()), tz)

        amount = self.sign * self.number
        if self.unit in "nhd":
            unit = {"n": "minutes", "h": "hours", "d": "days"}[self.unit]
            return now + datetime.timedelta(**{unit: amount})
        wall = now.astimezone(tz).replace(tzinfo=None)
        if self.unit == "m":
            return _local(_add_months(wall, amount), tz)
        if self.unit == "H":
            start = _local(wall.replace(minute=0, second=0, microsecond=0), tz)
            return start + datetime.timedelta(hours=amount)
        if self.unit == "D":
            midnight = datetime.datetime.combine(wall.date(), datetime.time())
            return _local(midnight + datetime.timedelta(days=amount), tz)
        # "M"
        first = datetime.datetime(wall.year, wall.month, 1)
        return _local(_add_months(first, amount), tz)


def parse(value) -> RelativeDate:
    """Check the syntax of `value` (no clock, no time zone needed); RelativeDateError when invalid."""
    if not isinstance(value, str) or not value.strip():
        raise RelativeDateError(f"A date is required: {SYNTAX_HELP}.")
    text = value.strip()
    if match := _RELATIVE.fullmatch(text):
        sign, digits, unit = match.groups()
        if len(digits) > len(str(MAX_NUMBER)) or int(digits) > MAX_NUMBER:
            raise RelativeDateError(f"'{text}' is out of range: the number may be at most {MAX_NUMBER}.")
        return RelativeDate(text, sign=-1 if sign == "-" else 1, number=int(digits), unit=unit)
    try:
        if ISO_DATE.fullmatch(text):
            return RelativeDate(text, absolute=datetime.date.fromisoformat(text))
        if ISO_TIMESTAMP.fullmatch(text):
            return RelativeDate(text, absolute=datetime.datetime.fromisoformat(text.replace("z", "Z")))
    except ValueError:
        raise RelativeDateError(f"'{text}' is not a valid date or timestamp.") from None
    raise RelativeDateError(f"'{text}' is not a valid date: {SYNTAX_HELP}.")


def resolve(value: str, *, tz: datetime.tzinfo | str | None = None, now: datetime.datetime | None = None):
    """`value` (a RelativeDate string) -> aware UTC datetime; raises RelativeDateError when invalid."""
    return parse(value).resolve(tz=tz, now=now)


# --- django-filter integration -------------------------------------------------------------------------------


class RelativeDateField(forms.Field):
    """Form field: validates the syntax and returns a `RelativeDate` (resolved later, with the time zone).

    A parameter that is present but empty (``?createdDateFrom=``) is a 400, like any other invalid value;
    an absent one filters nothing.
    """

    def clean(self, value):
        if value is None:
            return None
        try:
            parsed = parse(value)
            # Catch values that overflow at any clock/time zone now, so they are a 400 from the form.
            parsed.resolve(tz=UTC)
        except RelativeDateError as error:
            raise forms.ValidationError(str(error), code="invalid") from None
        return parsed


class TimezoneField(forms.Field):
    """Form field for the ``timezone`` parameter: an IANA name -> ZoneInfo (absent -> None, read as UTC)."""

    def clean(self, value):
        if value is None:
            return None
        if not value.strip():
            raise forms.ValidationError(
                "A time zone is required: expected an IANA name such as Europe/Warsaw."
            )
        try:
            return zone(value.strip())
        except RelativeDateError as error:
            raise forms.ValidationError(str(error), code="invalid") from None


class TimezoneFilter(django_filters.Filter):
    """The ``timezone`` parameter: validated here, read by every RelativeDateFilter of the same FilterSet."""

    field_class = TimezoneField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault(
            "label", "IANA time zone (default UTC) where H, D and M truncate, e.g. Europe/Warsaw."
        )
        super().__init__(*args, **kwargs)
        set_override(self, "field", {"type": "string", "default": "UTC", "description": self.label})

    def filter(self, qs, value):
        return qs


class RelativeDateFilter(django_filters.Filter):
    """``field_name`` ``lookup_expr`` (``gte`` for ...From, ``lt`` for ...To) a RelativeDate.

    Resolves at filtering time with the FilterSet's ``timezone_param`` value (default name ``timezone``; UTC when
    absent or when the FilterSet has no such filter). All dates of one request resolve against one clock reading.
    """

    field_class = RelativeDateField

    def __init__(self, field_name=None, lookup_expr="gte", *, timezone_param="timezone", **kwargs):
        bound = {
            "gte": "from (inclusive)",
            "gt": "after",
            "lt": "until (exclusive)",
            "lte": "until (inclusive)",
        }
        kwargs.setdefault("label", f"RelativeDate, {bound.get(lookup_expr, lookup_expr)}: {SYNTAX_HELP}.")
        super().__init__(field_name=field_name, lookup_expr=lookup_expr, **kwargs)
        set_override(self, "field", {"type": "string", "example": "-1D", "description": self.label})
        self.timezone_param = timezone_param

    def filter(self, qs, value):
        if value is None:
            return qs
        try:
            moment = value.resolve(tz=self._timezone(), now=self._now())
        except RelativeDateError as error:
            raise ValidationError({self._param_name(): [str(error)]}) from None
        return super().filter(qs, moment)

    def _timezone(self):
        parent = getattr(self, "parent", None)
        form = getattr(parent, "form", None)
        cleaned = getattr(form, "cleaned_data", None) or {}
        return cleaned.get(self.timezone_param) or UTC

    def _now(self):
        parent = getattr(self, "parent", None)
        if parent is None:
            return dj_timezone.now()
        if getattr(parent, "_relative_dates_now", None) is None:
            parent._relative_dates_now = dj_timezone.now()
        return parent._relative_dates_now

    def _param_name(self):
        parent = getattr(self, "parent", None)
        for name, candidate in getattr(parent, "filters", {}).items():
            if candidate is self:
                return name
        return self.field_name


class RelativeDateRange:
    """Declares a half-open range pair on a FilterSet in one line.

        createdDate = RelativeDateRange("created_at")
            -> createdDateFrom (created_at >= value) and createdDateTo (created_at < value)
        timeRange = RelativeDateRange("created_at", suffixes=(".from", ".to"))
            -> timeRange.from and timeRange.to

    Works with any django-filter FilterSet: on class creation it adds the two filters to the class's declared
    filters (which the FilterSet metaclass then copies into ``base_filters``) and removes itself.
    """

    def __init__(self, field_name: str, *, suffixes=("From", "To"), timezone_param="timezone", **kwargs):
        self.field_name = field_name
        self.suffixes = suffixes
        self.timezone_param = timezone_param
        self.kwargs = kwargs

    def filters(self, name: str) -> dict[str, RelativeDateFilter]:
        start, end = self.suffixes
        common = {"timezone_param": self.timezone_param, **self.kwargs}
        return {
            f"{name}{start}": RelativeDateFilter(self.field_name, "gte", **common),
            f"{name}{end}": RelativeDateFilter(self.field_name, "lt", **common),
        }

    def __set_name__(self, owner, name):
        declared = owner.__dict__.get("declared_filters")
        if declared is None:
            raise TypeError("RelativeDateRange must be declared on a django-filter FilterSet.")
        declared.update(self.filters(name))
        delattr(owner, name)
