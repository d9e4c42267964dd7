"""E-mail templates: the HTML (or visual) and plain-text versions of every e-mail sent to an end user."""

import uuid

from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from accounts.models import LicenseOwned, Stamped

TYPE_HTML, TYPE_VISUAL = "html", "visual"


def default_content() -> dict:
    return {"text": "", "html": "", "appearance": {}}


class Template(LicenseOwned, Stamped):
    """An e-mail template; `content` holds text, html and appearance ({key: {type, value}})."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    content = models.JSONField(default=default_content)
    type = models.CharField(
        max_length=10, choices=[(TYPE_HTML, "html"), (TYPE_VISUAL, "visual")], default=TYPE_HTML
    )
    attachments = models.ManyToManyField("accounts.Attachment", blank=True, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["license", "created_at"], name="template_license_created")]

    def __str__(self):
        return self.name


class OutboundMessage(LicenseOwned):
    """One e-mail to one recipient, sent later by a Celery task; rendered when it is requested, except a
    ticket's mail (`to_render`), which the worker renders before its first send.

    `key` is unique per license: one request makes one row per recipient, so a retried task or a retried
    request (same Idempotency-Key) finds the row and its `sent_at` instead of sending again.
    """

    KIND_TEST, KIND_FORWARDING, KIND_INVITATION = "test", "forwarding", "invitation"
    KIND_REPLY, KIND_ACKNOWLEDGEMENT = "reply", "acknowledgement"
    KIND_REPLY_ADDRESS = "replyAddress"  # the confirmation link of a reply address
    KIND_WEBHOOK_FAILING = "webhookFailing"  # tells the owners that a webhook gave up on a delivery
    STATUS_PENDING, STATUS_SENT, STATUS_FAILED = "pending", "sent", "failed"
    STATUS_SUPPRESSED = "suppressed"  # no longer written: mail-in now decides before queuing (old rows)
    # Claimed by a worker that is talking to the relay now (committed before the first SMTP command):
    # nobody else sends it until `next_attempt_at`, when a claim its worker never finished expires.
    STATUS_SENDING = "sending"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    key = models.CharField(max_length=200)
    kind = models.CharField(max_length=20)
    to = models.EmailField(max_length=254)
    subject = models.CharField(max_length=300)
    text = models.TextField()
    html = models.TextField(blank=True)
    # Inline files of the HTML part (the template's logo, referenced as cid:<cid>).
    attachments = models.ManyToManyField("accounts.Attachment", blank=True, related_name="+")
    status = models.CharField(max_length=10, default=STATUS_PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    # Pending after a temporary failure: when the sweeper tries again. Sending: when the claim expires.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Ticket mail (kinds reply and acknowledgement): our Message-ID (without <>) for threading, the ticket
    # and its message, the envelope headers decided when the row was written.
    message_id = models.CharField(max_length=250, blank=True, db_index=True)
    ticket = models.ForeignKey(
        "tickets.Ticket", null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    ticket_message = models.ForeignKey(
        "tickets.Message", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    from_email = models.CharField(max_length=400, blank=True)
    headers = models.JSONField(default=dict, blank=True)  # Reply-To, In-Reply-To, References, Auto-Submitted
    # Ticket mail: what the worker renders the text, the HTML, From and Reply-To from before its first send
    # (templates_app.ticket_mail.render_queued), emptied (null) once they are stored; null: rendered already.
    to_render = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint("license", "key", name="outbound_message_key_unique")]
        indexes = [
            models.Index(fields=["license", "status", "created_at"], name="outbound_license_status"),
            models.Index(fields=["ticket", "created_at"], name="outbound_ticket_created"),
            # The sweeper's scan: the few rows not finished yet, across licenses.
            models.Index(
                fields=["created_at"],
                name="outbound_unfinished",
                condition=models.Q(status__in=["pending", "sending"]),
            ),
        ]

    def __str__(self):
        return f"{self.kind} to {self.to} ({self.status})"


class Invitation(LicenseOwned):
    """An invitation of an `invited` agent. The e-mailed link carries this row's ID, signed and timestamped.

    A link works once: accepting sets `accepted_at`, re-inviting sets `revoked_at` on the earlier rows.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey("accounts.Agent", on_delete=models.CASCADE, related_name="invitations")
    created_at = models.DateTimeField(default=timezone.now)
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["license", "agent", "created_at"], name="invitation_license_agent")]

    def __str__(self):
        return f"Invitation of {self.agent_id}"


class ReplyAddress(LicenseOwned, Stamped):
    """An address of the customer's own domain (support@acme.com) that teams reply from once it is verified.

    Adding one e-mails a signed link to it; following the link and confirming sets `verified_at`. Until then
    mail goes out from the inbound address with this address as a Reply-To.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254)
    name = models.CharField(max_length=200, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "reply addresses"  # not Django's "reply addresss"
        constraints = [
            models.UniqueConstraint("license", Lower("email"), name="reply_address_email_unique"),
        ]
        indexes = [models.Index(fields=["license", "created_at"], name="reply_address_license_created")]

    def __str__(self):
        return f"{self.name} <{self.email}>" if self.name else self.email

    @property
    def verified(self) -> bool:
        return self.verified_at is not None


# Received mail lives in its own module; importing it here registers the models with the app.
from templates_app.models_forms import ContactForm  # noqa: E402, F401
from templates_app.models_inbound import BlockedSender, InboundMessage, TrustedSender  # noqa: E402, F401


class AgentNotification(LicenseOwned):
    """Something an agent is to be told by e-mail (a ticket assigned to them, a requester's message), waiting
    for the agent's next digest (templates_app.notifications): at most one e-mail per agent per
    NOTIFICATION_BATCH_SECONDS, listing every row pending then. `sent_at` is set by the digest that carried it;
    sent rows are kept a day (the last digest's time is the batching clock), then deleted."""

    KIND_ASSIGNED, KIND_ACTIVITY, KIND_RULE = "assigned", "requesterActivity", "rule"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey("accounts.Agent", on_delete=models.CASCADE, related_name="+", db_index=False)
    ticket = models.ForeignKey("tickets.Ticket", on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=20)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["agent", "sent_at", "created_at"], name="notification_agent_sent"),
            models.Index(fields=["ticket"], name="notification_ticket"),  # the purge's delete
            models.Index(
                fields=["created_at"], name="notification_pending", condition=models.Q(sent_at__isnull=True)
            ),
        ]

    def __str__(self):
        return f"{self.kind} of {self.ticket_id} for {self.agent_id}"


# Customers' own mail domains (DKIM) and mailboxes (their support addresses, IMAP polling) live in their own
# modules too.
from templates_app.models_domains import EmailDomain  # noqa: E402, F401
from templates_app.models_mailbox import Mailbox, MailboxState  # noqa: E402, F401
