"""The reports, each a declaration: what it counts (its rows), when (the time field the range and the buckets
read), how (its family's values) and how it is laid out. `REPORTS` holds them by name; tickets declares its
own (tickets.reports.definitions) and an app above tickets registers its own from its ready()
(`failedEmails`: templates_app/apps.py), so the reports' machinery names no app above it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from django.db.models import QuerySet

# Families: what each bucket (and the summary) holds.
COUNT, TIME, RATING, SOURCES = "count", "time", "rating", "sources"
# Layouts: `series` of time buckets (`interval`), `hours` (the 24 hours of the day), `rows` per agent or team.
SERIES, HOURS, AGENTS, TEAMS = "series", "hours", "agents", "teams"
SOURCE_NAMES = ["email", "api", "form", "admin", "system"]


@dataclasses.dataclass(frozen=True)
class Report:
    name: str
    family: str
    layout: str
    rows: Callable[
        [dict], QuerySet
    ]  # the license's countable rows; gets the query's options ({"status": ...})
    at: str  # the time field: the range and the buckets
    description: str
    seconds: str = ""  # TIME: the field holding each row's seconds
    business_seconds: str = ""  # TIME: the field of its business seconds (null: no policy), `clock=business`
    group: str = ""  # AGENTS/TEAMS: the field holding the agent's or the team's ID
    ticket: str = "ticket"  # the path from a row to its ticket ("" on tickets themselves)
    silo: str = ""  # the field holding the row's ticket's silo (default: the ticket's own, through `ticket`)
    ticket_optional: bool = False  # rows without a ticket count too, unless a ticket filter is given
    needs_status: bool = False


REPORTS: dict[str, Report] = {}


def register(report: Report) -> Report:
    REPORTS[report.name] = report
    return report
