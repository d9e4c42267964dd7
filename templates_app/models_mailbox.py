"""Mailboxes: a customer's support address (support@acme.com), the inbound address its mail is forwarded to, the
team its tickets land in, and optionally the IMAP account we poll for it (templates_app/inbound/imap.py)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models.functions import Lower

from accounts.models import LicenseOwned, Stamped
from templates_app.addresses import mailbox_address

SECURITY_SSL, SECURITY_STARTTLS = "ssl", "starttls"


class Mailbox(LicenseOwned, Stamped):
    """A support address of the customer. Mail forwarded to `inbound_address` (or fetched from the IMAP account)
    becomes tickets of `team` (the license's default team when the team was deleted).

    The IMAP password is stored as given (no secret store exists in this project; docs/operations.md, "IMAP
    polling"): it is write-only in the API and the admin, and recorded only as changed in the audit log.
    The polling state lives in MailboxState, so that a poll never writes (or audits) the configuration.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    email = models.EmailField(max_length=254)
    team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reply_address = models.ForeignKey(
        "templates_app.ReplyAddress", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    disabled = models.BooleanField(default=False)
    imap_host = models.CharField(max_length=253, blank=True)  # "" = no IMAP polling
    imap_port = models.PositiveIntegerField(null=True, blank=True)
    imap_security = models.CharField(max_length=10, blank=True)  # ssl | starttls
    imap_username = models.CharField(max_length=254, blank=True)
    imap_password = models.CharField(max_length=500, blank=True)
    imap_folder = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name_plural = "mailboxes"
        constraints = [models.UniqueConstraint("license", Lower("email"), name="mailbox_email_unique")]
        indexes = [models.Index(fields=["license", "created_at"], name="mailbox_license_created")]

    def __str__(self):
        return f"{self.name} <{self.email}>"

    @property
    def inbound_address(self) -> str:
        return mailbox_address(self.license_id, self.pk)

    @property
    def polls(self) -> bool:
        return bool(self.imap_host) and not self.disabled


class MailboxState(models.Model):
    """Where the IMAP polling of a mailbox stands: the folder's UIDVALIDITY and the last UID stored (advanced in
    the transaction that stores the message), the failure streak and its backoff, and the poll's lease."""

    mailbox = models.OneToOneField(Mailbox, primary_key=True, on_delete=models.CASCADE, related_name="state")
    uid_validity = models.BigIntegerField(null=True, blank=True)
    last_uid = models.BigIntegerField(default=0)
    failing = models.BooleanField(default=False)
    failures = models.PositiveIntegerField(default=0)  # consecutive failed polls
    owners_notified = models.BooleanField(default=False)  # this failing streak was mailed to the owners
    last_error = models.TextField(blank=True)
    last_fetched_at = models.DateTimeField(null=True, blank=True)
    next_poll_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)  # a poll runs until then (or its worker died)

    class Meta:
        indexes = [models.Index(fields=["next_poll_at"], name="mailbox_state_next_poll")]

    def __str__(self):
        return f"state of {self.mailbox_id}"
