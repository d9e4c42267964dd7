"""The contract's event objects (`events` of a ticket): the one place that builds an event's JSON.

Used by the single read and the writes' responses (`GET/PATCH /v1/tickets/{ID}`), by search with
`eventsScope=all` (the page's events in one more query, tickets.output) and by anything that later sends events
elsewhere (webhooks). One query per call: the events of the tickets, oldest first, each joined to its message
and that message's attachments (one row per attachment).

    {"ID", "date", "type", "author": {"ID", "name", "type"}, "source": {"type", "detailedSource"}, ...}

and by type: `message` → `message` {text, isPrivate, richTextHtml}, `attachments`, `deliveryStatus`; the others →
one key named like the type holding the stored payload ({old, new}, {added, removed}, {childTicketID}, the
rating object).
"""

from __future__ import annotations

from accounts.attachments import attachment_url
from accounts.models import Attachment
from helpdesk.api.renderers import iso
from tickets.models import TicketEvent

_ATTACHMENT = "message__transaction__attachments__"
_COLUMNS = (
    "id", "ticket_id", "type", "created_at", "author_type", "author_agent_id", "author_name", "source_type",
    "detailed_source", "payload", "message_id", "message__text", "message__is_private", "message__rich_text_html",
    "message__delivery_status",
    *(_ATTACHMENT + name for name in ("token", "name", "cid", "content_type", "sha256", "size")),
)  # fmt: skip


def _attachment(row) -> dict:
    token, name = row[_ATTACHMENT + "token"], row[_ATTACHMENT + "name"]
    return {
        "url": attachment_url(Attachment(token=token, name=name)),
        "cid": row[_ATTACHMENT + "cid"],
        "name": name,
        "type": row[_ATTACHMENT + "content_type"],
        "sha256": row[_ATTACHMENT + "sha256"],
        "token": token,
        "size": row[_ATTACHMENT + "size"],
    }


def _event(row) -> dict:
    agent_id = row["author_agent_id"]
    event = {
        "ID": str(row["id"]),
        "date": iso(row["created_at"]),
        "type": row["type"],
        "author": {
            "ID": None if agent_id is None else str(agent_id),
            "name": row["author_name"],
            "type": row["author_type"],
        },
        "source": {"type": row["source_type"], "detailedSource": row["detailed_source"]},
    }
    if row["type"] == "message":
        event["message"] = {
            "text": row["message__text"],
            "isPrivate": row["message__is_private"],
            "richTextHtml": row["message__rich_text_html"] or "",
        }
        event["attachments"] = []
        event["deliveryStatus"] = row["message__delivery_status"] or []
    else:
        event[row["type"]] = row["payload"]
    return event


def events_by_ticket(license_id: int, ticket_ids, *, event_ids=None) -> dict:
    """{ticket ID: [event, ...] oldest first} for these tickets of one license (every ID present)."""
    ticket_ids = list(ticket_ids)
    out: dict = {ticket_id: [] for ticket_id in ticket_ids}
    if not ticket_ids:
        return out
    rows = TicketEvent.objects.filter(license_id=license_id, ticket_id__in=ticket_ids)
    if event_ids is not None:
        rows = rows.filter(pk__in=event_ids)
    rows = rows.order_by("ticket_id", "created_at", "position", "id", _ATTACHMENT + "created_at").values(
        *_COLUMNS
    )
    last = None
    for row in rows:
        if last is None or last["ID"] != str(row["id"]):
            last = _event(row)
            out[row["ticket_id"]].append(last)
        if row["type"] == "message" and row[_ATTACHMENT + "token"] is not None:
            last["attachments"].append(_attachment(row))
    return out


def event_document(event: TicketEvent) -> dict:
    """One event's object (webhooks)."""
    return events_by_ticket(event.license_id, [event.ticket_id], event_ids=[event.pk])[event.ticket_id][0]
