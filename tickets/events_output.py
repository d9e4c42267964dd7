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

import orjson
from django.db.models import TextField
from django.db.models.functions import Cast

from accounts.attachments import download_url
from helpdesk.timestamps import iso
from tickets.models import TicketEvent

_ATTACHMENT = "message__transaction__attachments__"
# JSON columns come as text and are parsed by orjson: Django's JSONField converter costs several times as much,
# and a page of 100 tickets carries hundreds of events.
_JSON = {
    "payload_json": Cast("payload", TextField()),
    "delivery_json": Cast("message__delivery_status", TextField()),
}
_COLUMNS = (
    "id", "ticket_id", "type", "created_at", "author_type", "author_agent_id", "author_name", "source_type",
    "detailed_source", "payload_json", "message__text", "message__is_private", "message__rich_text_html",
    "delivery_json",
    *(_ATTACHMENT + name for name in ("token", "name", "cid", "content_type", "sha256", "size")),
)  # fmt: skip


def _attachment(token, name, cid, content_type, sha256, size) -> dict:
    return {
        "url": download_url(token, name),
        "cid": cid,
        "name": name,
        "type": content_type,
        "sha256": sha256,
        "token": token,
        "size": size,
    }


def _event(row) -> dict:
    (event_id, _, type_, created_at, author_type, agent_id, author_name, source_type, detailed_source, payload,
     text, is_private, rich_text_html, delivery) = row[:14]  # fmt: skip
    event = {
        "ID": str(event_id),
        "date": iso(created_at),
        "type": type_,
        "author": {
            "ID": None if agent_id is None else str(agent_id),
            "name": author_name,
            "type": author_type,
        },
        "source": {"type": source_type, "detailedSource": detailed_source},
    }
    if type_ == "message":
        event["message"] = {"text": text, "isPrivate": is_private, "richTextHtml": rich_text_html or ""}
        event["attachments"] = []
        event["deliveryStatus"] = orjson.loads(delivery) if delivery else []
    else:
        event[type_] = orjson.loads(payload) if payload else {}
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
    rows = (
        rows.annotate(**_JSON)
        .order_by("ticket_id", "created_at", "position", "id", _ATTACHMENT + "created_at")
        .values_list(*_COLUMNS)
    )
    last_id, last = None, None
    for row in rows:
        if row[0] != last_id:
            last_id, last = row[0], _event(row)
            out[row[1]].append(last)
        if row[14] is not None and row[2] == "message":
            last["attachments"].append(_attachment(*row[14:]))
    return out


def event_document(event: TicketEvent) -> dict:
    """One event's object (webhooks)."""
    return events_by_ticket(event.license_id, [event.ticket_id], event_ids=[event.pk])[event.ticket_id][0]
