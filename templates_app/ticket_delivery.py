"""What delivering a ticket's mail needs from the ticket, below both `mail` (the delivery calls it) and
`ticket_mail` (the composition uses it): the thread's Message-IDs, which files travel attached, and the delivery status told back to the ticket's message.
"""

from __future__ import annotations

import uuid

from django.conf import settings

from helpdesk.compiled import Compiled
from templates_app.models import InboundMessage, OutboundMessage

REFERENCES_LENGTH = 20  # Message-IDs in References: the first one and the latest ones (RFC 5322 3.6.4)


def _inbound_ids(ticket_id):
    """The Message-IDs received for the ticket: (created_at, message_id) rows, as a query to unite."""
    return (
        InboundMessage.objects.filter(ticket_id=ticket_id)
        .exclude(message_id="")
        .values_list("created_at", "message_id")
    )


def _thread_rows(ticket_id, recipient: str, exclude_pk=None):
    ours = (
        OutboundMessage.objects.filter(ticket_id=ticket_id, to__iexact=recipient)
        .exclude(message_id="")
        .exclude(pk=exclude_pk)
        .values_list("created_at", "message_id")
    )
    # one statement for both (issue 34: a statement less per recipient of a reply; bench/README.md)
    return _inbound_ids(ticket_id).union(ours, all=True)


# Compiled once (helpdesk.compiled): every mail of a reply reads it. Issue 34 (bench/README.md "Issue 34: writes,
# continued").
_thread = Compiled(_thread_rows, uuid.UUID, str)


def thread_ids(*, ticket, recipient: str, exclude_pk=None) -> list[str]:
    """The ticket's Message-IDs, oldest first: those we received and those we sent to `recipient`."""
    if exclude_pk is None:
        rows = _thread.rows(ticket.pk, recipient)
    else:
        rows = _thread_rows(ticket.pk, recipient, exclude_pk)
    ids = [message_id.strip("<>") for _, message_id in sorted(rows, key=lambda row: row[0])]
    unique = list(dict.fromkeys(ids))
    if len(unique) > REFERENCES_LENGTH:
        unique = [unique[0], *unique[-(REFERENCES_LENGTH - 1) :]]
    return unique


def threading_headers(ids: list[str]) -> dict:
    if not ids:
        return {}
    return {"In-Reply-To": f"<{ids[-1]}>", "References": " ".join(f"<{i}>" for i in ids)}


def split_attachments(ticket_message) -> tuple[list, list]:
    """(attached, linked): files are attached while their total stays within the limit, the rest linked."""
    if ticket_message is None or ticket_message.transaction_id is None:
        return [], []
    from accounts.models import Attachment

    attached, linked, total = [], [], 0
    limit = settings.HELPDESK_MAIL_ATTACHMENTS_MAX_BYTES
    for attachment in Attachment.objects.filter(transaction_id=ticket_message.transaction_id).order_by(
        "created_at", "id"
    ):
        if total + attachment.size <= limit:
            attached.append(attachment)
            total += attachment.size
        else:
            linked.append(attachment)
    return attached, linked


def record_queued(message, rows: list[OutboundMessage]) -> None:
    """`record(row, "queued")` of every row of a message created in this transaction, in one write."""
    rows = [row for row in rows if row.kind == OutboundMessage.KIND_REPLY]
    if not rows:
        return
    from tickets import services as ticket_services

    ticket_services.message_deliveries_queued(
        message=message, recipients=[(row.to, row.created_at) for row in rows]
    )


def record(row: OutboundMessage, status: str, date=None) -> None:
    """Tell the ticket's message how its mail to this recipient went (its event's deliveryStatus)."""
    if row.kind != OutboundMessage.KIND_REPLY or row.ticket_message_id is None:
        return
    from tickets import services as ticket_services

    ticket_services.message_delivery_record(
        message_id=row.ticket_message_id, recipient=row.to, status=status, date=date
    )
