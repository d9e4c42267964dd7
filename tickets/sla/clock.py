"""Business time: pure arithmetic on aware datetimes, no database (tested by hand-computed cases).

A `Schedule` is an IANA time zone, the working intervals of each weekday in local wall time, and holidays (local
dates without work). Business time is real elapsed time inside those intervals: an interval's ends are wall
times of its day converted with zoneinfo, so the night a clock moves forward an interval `01:00-03:00` lasts one
real hour (Europe/Warsaw, 31 March 2024) and the night it moves back three. A wall time that does not exist (the
skipped hour) is read with the offset before the change (zoneinfo's fold=0), so `02:30` that night is 03:30.
`None` instead of a schedule is 24/7.

`add(schedule, start, seconds)` is the moment `seconds` of business time after `start`; `between(schedule,
start, end)` the business seconds in [start, end) (negative when end < start). A schedule has at least one
interval (checked at save), so `add` always ends; it gives up after MAX_DAYS of calendar days (a misconfigured
schedule), raising ValueError.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MAX_DAYS = 366 * 20


@dataclasses.dataclass(frozen=True)
class Schedule:
    timezone: ZoneInfo
    # weekday (0 = Monday) -> [(start, end)] in minutes after local midnight, end <= 1440, sorted, disjoint
    week: tuple[tuple[tuple[int, int], ...], ...]
    holidays: frozenset[date] = frozenset()

    @classmethod
    def of(cls, timezone: str, week: dict, holidays=()) -> Schedule:
        """From the API's shapes: `week` {"mon": [["09:00", "17:00"]], ...}, holidays ["YYYY-MM-DD"]."""
        days = tuple(
            tuple(sorted((minutes(start), minutes(end)) for start, end in week.get(name) or []))
            for name in DAYS
        )
        return cls(ZoneInfo(timezone), days, frozenset(date.fromisoformat(d) for d in holidays))

    def intervals(self, day: date) -> list[tuple[datetime, datetime]]:
        """The day's working intervals as UTC instants (none on a holiday)."""
        if day in self.holidays:
            return []
        out = []
        for start, end in self.week[day.weekday()]:
            out.append((self._instant(day, start), self._instant(day, end)))
        return out

    def _instant(self, day: date, minute: int) -> datetime:
        if minute == 1440:
            day, minute = day + timedelta(days=1), 0
        local = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=self.timezone)
        return local.astimezone(UTC)

    def days_from(self, moment: datetime):
        """The local days from the day before `moment`'s (an interval never leaves its own day) onwards."""
        day = moment.astimezone(self.timezone).date() - timedelta(days=1)
        for _ in range(MAX_DAYS):
            yield day
            day += timedelta(days=1)
        raise ValueError("No working time within the schedule's horizon.")


def minutes(text: str) -> int:
    """'HH:MM' (00:00 to 24:00) as minutes after midnight; ValueError otherwise."""
    if not isinstance(text, str) or len(text) != 5 or text[2] != ":":
        raise ValueError("Expected HH:MM.")
    hours, mins = text[:2], text[3:]
    if not (hours.isdigit() and mins.isdigit()):
        raise ValueError("Expected HH:MM.")
    value = int(hours) * 60 + int(mins)
    if int(mins) > 59 or value > 1440:
        raise ValueError("Expected a time from 00:00 to 24:00.")
    return value


def add(schedule: Schedule | None, start: datetime, seconds: float) -> datetime:
    """The moment `seconds` (>= 0) of business time after `start`."""
    if schedule is None:
        return start + timedelta(seconds=seconds)
    left = timedelta(seconds=max(seconds, 0))
    for day in schedule.days_from(start):
        for begin, end in schedule.intervals(day):
            if end <= start:
                continue
            begin = max(begin, start)
            if left <= end - begin:
                # Used up exactly at an interval's end: that end, not the next opening.
                return begin + left
            left -= end - begin
    raise AssertionError("unreachable")  # days_from raises first


def between(schedule: Schedule | None, start: datetime, end: datetime) -> float:
    """Business seconds in [start, end); negative when `end` is before `start`."""
    if end < start:
        return -between(schedule, end, start)
    if schedule is None:
        return (end - start).total_seconds()
    total = timedelta()
    last_day = end.astimezone(schedule.timezone).date()
    for day in schedule.days_from(start):
        if day > last_day:
            break
        for begin, finish in schedule.intervals(day):
            overlap = min(finish, end) - max(begin, start)
            if overlap > timedelta():
                total += overlap
    return total.total_seconds()
