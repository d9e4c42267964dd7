"""The contract's event objects (`events` of a ticket), defined once: `EVENT` and `BY_TYPE` below, tables of
tickets.document's nodes from which both the JSON (`events_by_ticket`) and the OpenAPI component `TicketEvent`
(`event_serializer()`, used by tickets.api.serializers) derive.

Used by the single read and the writes' responses (`GET/PATCH /v1/tickets/{ID}`), by search with
`eventsScope=all` (the page's events in one more query, tickets.output), by the admin's conversation and by the
webhooks. One query per call: the events of the tickets, oldest first, each joined to its message and that
message's attachments (one row per attachment).

    {"ID", "date", "type", "author": {"ID", "name", "type"}, "source": {"type", "detailedSource"}, ...}

and by type: `message` → `message` {text, isPrivate, richTextHtml}, `attachments`, `deliveryStatus`; the others →
one key named like the type holding the stored payload ({old, new}, {added, removed}, {childTicketID}, the
rating object; written by tickets.events.History).
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass

from django.db.models import TextField
from django.db.models.functions import Cast
from rest_framework import serializers

from accounts.api.serializers import AttachmentOutputSerializer
from accounts.attachments import download_url
from helpdesk.compiled import Compiled
from tickets import document
from tickets.document import Column, Obj
from tickets.models import AUTHOR_TYPES, EVENT_TYPES, SOURCE_TYPES, TicketEvent


# The shapes of the stored payloads (JSON written by tickets.events.History), for the OpenAPI document.
class _DeliveryDoc(serializers.Serializer):
    date = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=["queued", "sent", "deferred", "bounced", "failed"])
    recipient = serializers.EmailField()


class _ChangeDoc(serializers.Serializer):
    old = serializers.JSONField()
    new = serializers.JSONField()


class _AssignmentChangeDoc(serializers.Serializer):
    old = document.ASSIGNMENT.serializer()()
    new = document.ASSIGNMENT.serializer()()


class _SetChangeDoc(serializers.Serializer):
    added = serializers.ListField(child=serializers.UUIDField())
    removed = serializers.ListField(child=serializers.UUIDField())


class _MergeDoc(serializers.Serializer):
    childTicketID = serializers.UUIDField()


class _RuleDoc(serializers.Serializer):
    ruleID = serializers.UUIDField()
    name = serializers.CharField()
    skipped = serializers.CharField(
        required=False, help_text="Present when the rule's actions could not apply: why (nothing changed)."
    )
    messageSkipped = serializers.CharField(
        required=False,
        help_text="Present when the rule's public message was left out (the client's message it would answer "
        "is automatic: an auto-reply, a bounce, past the storm limits): why; its other actions applied.",
    )


class _SlaEventDoc(serializers.Serializer):
    metric = serializers.ChoiceField(choices=["firstResponse", "nextResponse", "resolution"])
    dueAt = serializers.DateTimeField(help_text="When the clock ran out (the breach's moment).")
    policyID = serializers.UUIDField()


def _payload(schema) -> Column:
    return Column("payload_json", schema, "json_object")


@dataclass(frozen=True)
class _Attachments:
    """The message's attachments: built as an empty list, filled from the rows that follow (`events_by_ticket`)."""

    @staticmethod
    def schema(**kwargs) -> serializers.Field:
        return AttachmentOutputSerializer(many=True, **kwargs)


# Every event, in response order.
EVENT = {
    "ID": Column("id", serializers.UUIDField, "uuid"),
    "date": Column("created_at", serializers.DateTimeField, "timestamp"),
    "type": Column("type", lambda: serializers.ChoiceField(choices=EVENT_TYPES)),
    "author": Obj(
        "_EventAuthorDoc",
        {
            "ID": Column(
                "author_agent_id",
                lambda: serializers.UUIDField(
                    allow_null=True, help_text="The agent's ID; null for a client or the system."
                ),
                "uuid",
            ),
            "name": Column("author_name", serializers.CharField),
            "type": Column("author_type", lambda: serializers.ChoiceField(choices=AUTHOR_TYPES)),
        },
    ),
    "source": Obj(
        "_EventSourceDoc",
        {
            "type": Column("source_type", lambda: serializers.ChoiceField(choices=SOURCE_TYPES)),
            "detailedSource": Column(
                "detailed_source",
                lambda: serializers.CharField(
                    help_text="The actor type of the write (audit log authorType)."
                ),
            ),
        },
    ),
}
# What each type adds, after the above.
BY_TYPE = {
    "message": {
        "message": Obj(
            "_EventMessageDoc",
            {
                "text": Column("message__text", serializers.CharField),
                "isPrivate": Column("message__is_private", serializers.BooleanField),
                "richTextHtml": Column("message__rich_text_html", serializers.CharField, "text"),
            },
        ),
        "attachments": _Attachments(),
        "deliveryStatus": Column(
            "delivery_json", lambda **kwargs: _DeliveryDoc(many=True, **kwargs), "json_list"
        ),
    },
    "status": {"status": _payload(_ChangeDoc)},
    "priority": {"priority": _payload(_ChangeDoc)},
    "silo": {"silo": _payload(_ChangeDoc)},
    "assignment": {"assignment": _payload(_AssignmentChangeDoc)},
    "tags": {"tags": _payload(_SetChangeDoc)},
    "followers": {"followers": _payload(_SetChangeDoc)},
    "teams": {"teams": _payload(_SetChangeDoc)},
    "merge": {"merge": _payload(_MergeDoc)},
    "unmerge": {"unmerge": _payload(_MergeDoc)},  # a merge undone (DELETE .../childTickets/{childID})
    "rating": {"rating": _payload(document.RATING.serializer())},
    "rule": {"rule": _payload(_RuleDoc)},
    "sla": {"sla": _payload(_SlaEventDoc)},  # an SLA clock breached (tickets.sla.sweep)
}


def event_serializer() -> type[serializers.Serializer]:
    """The OpenAPI component `TicketEvent`: the common keys, then every type's (not required: only the key named
    by `type` is present, with `attachments` and `deliveryStatus` for a message)."""
    fields = document.schema_fields(EVENT)
    for added in BY_TYPE.values():
        for key, node in added.items():
            fields[key] = (node.serializer() if isinstance(node, Obj) else node.schema)(required=False)
    return type(
        "TicketEventDocSerializer",
        (serializers.Serializer,),
        {
            **fields,
            "__doc__": "An event of the ticket's history. Besides the common fields, only the key named by `type` "
            "is present (`message` also has attachments and deliveryStatus).",
            "Meta": type("Meta", (), {"ref_name": "TicketEvent"}),
        },
    )


_ATTACHMENT = "message__transaction__attachments__"
_ATTACHMENT_FIELDS = ("token", "name", "cid", "content_type", "sha256", "size")
# JSON columns come as text and are parsed by orjson (document.KINDS): Django's JSONField converter costs several
# times as much, and a page of 100 tickets carries hundreds of events.
_JSON = {
    "payload_json": Cast("payload", TextField()),
    "delivery_json": Cast("message__delivery_status", TextField()),
}
_COLUMNS = (
    "id", "ticket_id", "type", "created_at", "author_type", "author_agent_id", "author_name", "source_type",
    "detailed_source", "payload_json", "message__text", "message__is_private", "message__rich_text_html",
    "delivery_json", *(_ATTACHMENT + name for name in _ATTACHMENT_FIELDS),
)  # fmt: skip
_TYPE, _FIRST_ATTACHMENT = _COLUMNS.index("type"), _COLUMNS.index(_ATTACHMENT + "token")


def _builder(node):
    """What `node.build` does, as a function of a `_COLUMNS` row (a tuple) with the column's index and converter
    resolved once. Events come by the hundred in a page: measured on 100 tickets' events, this costs the CPU of
    the hand-written builder it replaced, `node.build` over `.values()` dicts ~15% more."""
    if isinstance(node, Column):
        convert, index = document.KINDS[node.kind][1], _COLUMNS.index(node.column)
        return lambda row: convert(row[index])
    if isinstance(node, Obj) and node.null_when is None:
        parts = [(key, _builder(child)) for key, child in node.fields.items()]
        return lambda row: {key: build(row) for key, build in parts}
    if isinstance(node, _Attachments):
        return lambda row: []
    raise TypeError(f"no event builder for {node!r}")


_BUILDERS = {
    type_: [(key, _builder(node)) for key, node in {**EVENT, **BY_TYPE[type_]}.items()]
    for type_ in EVENT_TYPES
}


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


def _event(row: tuple) -> dict:
    return {key: build(row) for key, build in _BUILDERS[row[_TYPE]]}


@functools.cache
def _events_query():
    """The events' columns and order, built once per process: each read only adds its filters, which makes the
    same statement. Issue 34: building it (the JSON casts resolved, four clones) cost ~0.5 ms of CPU per ticket
    read, on every write's response (bench/README.md "Issue 34: writes, continued")."""
    return (
        TicketEvent.objects.annotate(**_JSON)
        .order_by("ticket_id", "created_at", "position", "id", _ATTACHMENT + "created_at")
        .values_list(*_COLUMNS)
    )


_ticket_events = Compiled(
    lambda license_id, ticket_id: _events_query().filter(license_id=license_id, ticket_id__in=[ticket_id]),
    int,
    uuid.UUID,
)


def events_by_ticket(license_id: int, ticket_ids, *, event_ids=None) -> dict:
    """{ticket ID: [event, ...] oldest first} for these tickets of one license (every ID present)."""
    ticket_ids = list(ticket_ids)
    out: dict = {ticket_id: [] for ticket_id in ticket_ids}
    if not ticket_ids:
        return out
    if event_ids is None and len(ticket_ids) == 1:  # a ticket's read, every write's response among them
        rows = _ticket_events.rows(license_id, ticket_ids[0])
    else:
        rows = _events_query().filter(license_id=license_id, ticket_id__in=ticket_ids)
        if event_ids is not None:
            rows = rows.filter(pk__in=event_ids)
    last_id, last = None, None
    for row in rows:
        if row[0] != last_id:
            last_id, last = row[0], _event(row)
            out[row[1]].append(last)
        if row[_FIRST_ATTACHMENT] is not None and row[_TYPE] == "message":
            last["attachments"].append(_attachment(*row[_FIRST_ATTACHMENT:]))
    return out


def event_document(event: TicketEvent) -> dict:
    """One event's object (webhooks)."""
    return events_by_ticket(event.license_id, [event.ticket_id], event_ids=[event.pk])[event.ticket_id][0]
