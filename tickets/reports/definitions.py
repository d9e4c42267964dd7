"""tickets' reports (the contract's names). The metrics they read are defined in tickets.reports.cycles and
docs/api.md ("Reports"); `failedEmails` is the e-mail app's (templates_app/reports.py)."""

from __future__ import annotations

from tickets.models import Ticket
from tickets.reports.models import TicketMetrics, TicketResolution
from tickets.reports.registry import (
    AGENTS,
    COUNT,
    HOURS,
    RATING,
    SERIES,
    SOURCES,
    TEAMS,
    TIME,
    Report,
    register,
)


def _tickets(options):
    return Ticket.objects.all()


def _created(options):
    return TicketMetrics.objects.all()  # a ticket's metrics row carries its creation and its source


def _responses(options):
    return TicketMetrics.objects.filter(first_response_at__isnull=False)


def _resolutions(options):
    return TicketResolution.objects.all()


def _rated(options):
    return Ticket.objects.filter(rated_at__isnull=False, rating_score__in=["good", "bad"])


def _in_status(options):
    return Ticket.objects.filter(status=options["status"])


_LAYOUTS = {"": SERIES, "24": HOURS, "PerAgent": AGENTS, "PerTeam": TEAMS}


def _family(name, family, rows, at, description, *, suffixes, seconds="", agent="", team="", ticket="ticket",
            silo="", needs_status=False, business_seconds=""):  # fmt: skip
    for suffix in suffixes:
        layout = _LAYOUTS[suffix]
        register(
            Report(
                name=name + suffix,
                family=family,
                layout=layout,
                rows=rows,
                at=at,
                description=description,
                seconds=seconds,
                business_seconds=business_seconds,
                group={AGENTS: agent, TEAMS: team}.get(layout, ""),
                ticket=ticket,
                silo=silo,
                needs_status=needs_status,
            )
        )


_family("newTickets", COUNT, _tickets, "created_at", "Tickets created.", suffixes=("", "24"), ticket="")
_family(
    "responseTime", TIME, _responses, "first_response_at",
    "First responses given: seconds from the client's first message to the first public agent reply.",
    suffixes=("", "24", "PerAgent", "PerTeam"), seconds="first_response_seconds",
    agent="first_response_agent_id", team="first_response_team_id", silo="silo",
    business_seconds="first_response_business_seconds",
)  # fmt: skip
_family(
    "resolutionTime", TIME, _resolutions, "solved_at",
    "Resolutions: seconds from a ticket's creation (or reopening) to its first `solved` after it.",
    suffixes=("", "24", "PerAgent", "PerTeam"), seconds="seconds", agent="agent_id", team="team_id", silo="silo",
    business_seconds="business_seconds",
)  # fmt: skip
_family(
    "rating", RATING, _rated, "rated_at", "Ratings given by customers, by when they rated.",
    suffixes=("", "24", "PerAgent", "PerTeam"), agent="assignment_agent_id", team="assignment_team_id", ticket="",
)  # fmt: skip
_family(
    "status", COUNT, _in_status, "created_at", "Tickets created in the range that are now in `status`.",
    suffixes=("", "24", "PerAgent", "PerTeam"), agent="assignment_agent_id", team="assignment_team_id", ticket="",
    needs_status=True,
)  # fmt: skip
register(
    Report(
        name="ticketSources24",
        family=SOURCES,
        layout=HOURS,
        rows=_created,
        at="created_at",
        description="Tickets created, per source (email, api, form, admin, system), per hour of the day.",
        silo="silo",
    )
)
