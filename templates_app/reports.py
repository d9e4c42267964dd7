"""The e-mail app's report, `failedEmails`: outbound mail that gave up, by when it was queued. Mail of a
ticket counts while the ticket is reported (not in spam or trash); mail of no ticket (an invitation) counts
unless a team, agent or tag filter asks for tickets. Registered from templates_app/apps.py."""

from __future__ import annotations

from templates_app.models import OutboundMessage
from tickets.reports.registry import COUNT, SERIES, Report, register


def _failed(options):
    return OutboundMessage.objects.filter(status=OutboundMessage.STATUS_FAILED)


def register_reports() -> None:
    register(
        Report(
            name="failedEmails",
            family=COUNT,
            layout=SERIES,
            rows=_failed,
            at="created_at",
            description="Outbound e-mails that failed, by when they were queued.",
            ticket="ticket",
            ticket_optional=True,
        )
    )
