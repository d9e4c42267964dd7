"""Collision detection: a ticket's version, shown as its `ETag`, and the refusal of a write made against an older
version (`If-Match`), with the events its writer has not seen, so two agents never answer one customer blind.

The version is the ticket's `updatedAt` in microseconds since the epoch: every write that changes what the
ticket shows stamps it (tickets.services), and the check runs under the ticket's row lock, so a write that
passes it changes the version the writer read. The ETag is strong (`"1764087318901234"`): it names the
ticket's state, which If-Match compares strongly (RFC 9110 13.1.1). A `W/` prefix in If-Match is tolerated,
because compressing proxies (nginx with gzip) weaken the ETags they pass on, and a client behind one would
otherwise never match.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from helpdesk.errors import Conflict, field_error
from helpdesk.timestamps import iso
from tickets.events_output import events_by_ticket
from tickets.models import Ticket, TicketEvent

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MICROSECOND = timedelta(microseconds=1)
# The 409 lists at most this many events (the newest); a client that far behind reads the ticket again.
MAX_EVENTS = 100


def version(updated_at: datetime | str) -> int:
    """The version of a ticket last stamped at `updated_at` (a datetime, or PostgreSQL's ISO text of it)."""
    if isinstance(updated_at, str):
        updated_at = datetime.fromisoformat(updated_at)
    return (updated_at - EPOCH) // ONE_MICROSECOND


def etag(updated_at: datetime | str) -> str:
    return f'"{version(updated_at)}"'


def expected_versions(if_match: str | None) -> frozenset[int] | None:
    """The versions an If-Match header accepts; None when it accepts any (absent, or `*`)."""
    if if_match is None or if_match.strip() == "*":
        return None
    versions = set()
    for tag in if_match.split(","):
        value = tag.strip().removeprefix("W/")
        if len(value) < 3 or value[0] != '"' or value[-1] != '"' or not value[1:-1].isdigit():
            raise field_error(
                "If-Match",
                'Expected the ETag of the ticket, as GET /v1/tickets/{ID} gave it (e.g. "1764...").',
            )
        versions.add(int(value[1:-1]))
    return frozenset(versions)


def check(ticket: Ticket, expected: frozenset[int] | None) -> None:
    """Refuse (409 `ticket_changed`) a write to `ticket` (locked) made against a version it no longer has."""
    if expected is None or version(ticket.updated_at) in expected:
        return
    since = EPOCH + max(expected) * ONE_MICROSECOND
    raise Conflict(
        "The ticket changed since you read it (If-Match): read what happened since, then send your change "
        "again with the new ETag.",
        code="ticket_changed",
        details={
            "ETag": etag(ticket.updated_at),
            "updatedAt": iso(ticket.updated_at),
            "events": events_since(ticket, since),
        },
    )


def events_since(ticket: Ticket, since: datetime) -> list[dict]:
    """The ticket's events after `since`, oldest first (the newest MAX_EVENTS), in the ticket events' shape."""
    newest = (
        TicketEvent.objects.filter(license_id=ticket.license_id, ticket_id=ticket.pk, created_at__gt=since)
        .order_by("-created_at", "-position", "-id")
        .values_list("id", flat=True)[:MAX_EVENTS]
    )
    return events_by_ticket(ticket.license_id, [ticket.pk], event_ids=list(newest))[ticket.pk]
