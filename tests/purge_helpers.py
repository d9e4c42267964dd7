"""Tickets for the purge tests, made directly (fast, and with an exact updated_at)."""

import itertools
import secrets

from django.core.files.base import ContentFile
from django.utils import timezone

from accounts.models import Attachment, AttachmentTransaction
from tickets.models import Message, Tag, Ticket, TicketEvent

_numbers = itertools.count(1)


def _event(ticket, message) -> None:
    # the history entry that points at the message (the purge must delete it first)
    TicketEvent.objects.create(
        license_id=ticket.license_id, ticket=ticket, message=message, type="message", author_type="client",
        source_type="api",
    )  # fmt: skip


def make_ticket(license, *, silo="tickets", updated_at=None, parent=None, messages=2) -> Ticket:
    number = next(_numbers)
    ticket = Ticket.objects.create(
        license=license,
        number=number,
        short_id=str(number),
        subject=f"Ticket {number}",
        requester_email="client@example.com",
        silo=silo,
        parent=parent,
        updated_at=updated_at or timezone.now(),
    )
    for i in range(messages):
        message = Message.objects.create(license=license, ticket=ticket, text=f"message {i}")
        _event(ticket, message)
    tag, _ = Tag.objects.get_or_create(license=license, name="billing")
    ticket.tags.add(tag)
    if license.default_team_id:
        ticket.teams.add(
            license.default_team,
            through_defaults={"license_id": license.pk, "silo": ticket.silo, "status": ticket.status},
        )
    return ticket


def attach_file(ticket, content=b"hello") -> Attachment:
    """A message with an attachment stored through Django's storage, as the services bind it."""
    txn = AttachmentTransaction.objects.create(
        license=ticket.license, bound_type="ticket", bound_id=ticket.pk
    )
    message = Message.objects.create(
        license=ticket.license, ticket=ticket, text="see attached", transaction=txn
    )
    _event(ticket, message)
    attachment = Attachment(
        license=ticket.license,
        transaction=txn,
        name="file.txt",
        content_type="text/plain",
        size=len(content),
        sha256="0" * 64,
        token=secrets.token_urlsafe(24),
    )
    attachment.file.save("file.txt", ContentFile(content), save=False)
    attachment.save()
    return attachment
