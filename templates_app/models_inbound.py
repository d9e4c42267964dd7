"""Received mail: one InboundMessage per message and license (the raw bytes in the file storage), and the
senders whose mail goes to the spam silo (BlockedSender) and those never marked spam (TrustedSender)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from accounts.models import LicenseOwned, Stamped


def raw_path(instance, filename):
    return f"inbound/{instance.license_id}/{instance.created_at:%Y/%m}/{instance.pk}.eml"


class InboundMessage(LicenseOwned):
    """One received e-mail, whatever became of it (`kind`), kept raw for support and for threading.

    `message_id` is unique per license: an MTA that delivers the same message twice (a retry after a lost
    reply, two recipients of one license) finds the row and stores nothing more. A message without a
    Message-ID gets one derived from its bytes (`<sha256@no-message-id>`), so a retry still matches.
    `auto_reply_allowed` is the decision for the acknowledgement (loops, bulk mail, spam and blocked senders,
    the per-sender storm limit), taken once by the inbound service, which queues the acknowledgement then.
    """

    KIND_TICKET, KIND_REPLY, KIND_BOUNCE, KIND_LOOP = "ticket", "reply", "bounce", "loop"
    KINDS = [KIND_TICKET, KIND_REPLY, KIND_BOUNCE, KIND_LOOP]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    message_id = models.CharField(max_length=500)
    created_at = models.DateTimeField(default=timezone.now)  # when it was received
    kind = models.CharField(max_length=10, choices=[(k, k) for k in KINDS])
    # who wrote, lower case: the requester (From, or a contact form's Reply-To); "" when nobody
    sender = models.CharField(max_length=254, blank=True)
    recipient = models.CharField(max_length=254, blank=True)  # the inbound address that named the license
    subject = models.CharField(max_length=500, blank=True)
    size = models.PositiveIntegerField(default=0)
    raw = models.FileField(upload_to=raw_path, max_length=500)
    ticket = models.ForeignKey(
        "tickets.Ticket", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    # not `message`: its column would clash with the Message-ID field `message_id`
    ticket_message = models.ForeignKey(
        "tickets.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    auto_reply_allowed = models.BooleanField(default=False)
    # Why it was handled as it was (bounce, loop, spam, no auto-reply because ...), for the admin.
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint("license", "message_id", name="inbound_message_id_unique_per_license")
        ]
        indexes = [
            # the storm limit: auto-replies to one sender in the last hour
            models.Index(fields=["license", "sender", "created_at"], name="inbound_license_sender"),
            models.Index(fields=["license", "created_at"], name="inbound_license_created"),
            # the storm limits' count: the acknowledged mail of the license's last hour (at most the limits'
            # rows, not every mail of the hour: templates_app/inbound/storm.py)
            models.Index(
                fields=["license", "created_at"],
                name="inbound_license_acknowledged",
                condition=models.Q(auto_reply_allowed=True),
            ),
            # threading reads a ticket's mail, the purge deletes it
            models.Index(fields=["license", "ticket"], name="inbound_license_ticket"),
        ]

    def __str__(self):
        return f"{self.kind} from {self.sender or '<>'}: {self.subject[:60]}"


class BlockedSender(LicenseOwned, Stamped):
    """A sender whose mail goes to the spam silo: an exact address (jo@example.com) or a domain (@example.com)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.CharField(
        max_length=254, help_text="An address (jo@example.com) or a whole domain (@example.com)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint("license", Lower("email"), name="blocked_sender_unique_per_license")
        ]

    def __str__(self):
        return self.email


class TrustedSender(LicenseOwned, Stamped):
    """A sender whose mail is never marked spam (over `X-Spam-Flag`; a block of the same sender still wins): an
    exact address (jo@example.com) or a domain (@example.com)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.CharField(
        max_length=254, help_text="An address (jo@example.com) or a whole domain (@example.com)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint("license", Lower("email"), name="trusted_sender_unique_per_license")
        ]

    def __str__(self):
        return self.email
