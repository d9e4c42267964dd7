"""The audit log: one append-only, hash-chained entry per logical change of an audited object.

Entries outlive what they describe. `license` is a foreign key without a database constraint and with
DO_NOTHING, so deleting a license (or any audited object) never cascades into its history: the entries keep
the license's ID and stay verifiable. Nothing in the application updates or deletes an entry: the model and
its queryset refuse, and the database's triggers (migration 0003, on PostgreSQL and SQLite) refuse UPDATE, TRUNCATE
and any DELETE but the retention purge's: inserting an `AuditPurge` record, whose trigger deletes the entries it
covers. So every cut at the oldest end is recorded; `verify_audit_chain` checks the chains against the records
and against the chain heads published outside the database (`audit/digests.py`). (On SQLite, a migration that
rebuilds one of these tables drops its triggers: such a migration must create them again.)
"""

import uuid

from django.db import models
from django.utils import timezone

from helpdesk.context import AUTHOR_TYPES

ACTION_CREATE, ACTION_UPDATE, ACTION_DELETE = "create", "update", "delete"
ACTIONS = [ACTION_CREATE, ACTION_UPDATE, ACTION_DELETE]

# The seed spec's target enum (all accepted in filters; only registered models produce entries).
TARGETS = [
    "agents", "blockedEmails", "cannedResponses", "contactForms", "customFields", "emailDomains", "integrations",
    "licenses", "macros", "forwardingAddresses", "replyAddresses", "reports", "rules", "screencasts", "tags",
    "teams", "emailTemplates", "views", "webhooks", "trustedEmails",
    "mailboxes",  # ours: the e-mail channel's mailboxes (the spec's enum has no name for them)
    "businessHours", "slaPolicies",
]  # fmt: skip


class AppendOnly(Exception):
    """Raised on any attempt to change or remove an audit entry through the ORM."""


class AuditEntryQuerySet(models.QuerySet):
    def for_license(self, license):
        return self.filter(license=license)

    def update(self, **kwargs):
        raise AppendOnly("Audit entries are append-only.")

    def delete(self):
        raise AppendOnly("Audit entries are append-only.")

    _raw_delete = delete


class AuditEntry(models.Model):
    """Who changed which object of a license, when, from where, and each changed field's before and after.

    `seq`, `prev_hash` and `hash` chain the entries of one license: `hash` covers the entry's content and the
    previous entry's hash, so a modified, deleted or reordered row breaks the chain (`verify_audit_chain`).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    license = models.ForeignKey(
        "accounts.License", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    seq = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    action = models.CharField(max_length=10, choices=[(a, a) for a in ACTIONS])
    target = models.CharField(max_length=30, choices=[(t, t) for t in TARGETS])
    object_id = models.CharField(max_length=64)
    entity_name = models.CharField(max_length=255, blank=True)
    author_type = models.CharField(max_length=20, choices=[(t, t) for t in AUTHOR_TYPES])
    # The author's agent ID in the entry's license (what /v1/agents lists), a support admin's account ID when
    # they are no agent of it, SYSTEM_ACTOR_ID for the system. Entries written before that rule hold the
    # account ID here, and null for the system (they stay as written: the chain covers them).
    author_id = models.UUIDField(null=True, blank=True)
    # The person's account ID (null for the system and for entries written before it was recorded).
    author_account_id = models.UUIDField(null=True, blank=True)
    author_email = models.CharField(max_length=254, blank=True)
    author_ip = models.CharField(max_length=45, blank=True)
    author_user_agent = models.CharField(max_length=512, blank=True)
    # The OAuth app that acted for the person (author type `api` through a Bearer token), else null. Nullable
    # so that adding it is an ALTER TABLE, not SQLite's copy of an append-only table.
    author_app_name = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    # {field: {"before": value, "after": value}}; secrets appear only as "<redacted>".
    changes = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64, blank=True)
    hash = models.CharField(max_length=64)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        verbose_name = "audit log entry"
        verbose_name_plural = "audit log"
        constraints = [models.UniqueConstraint("license", "seq", name="audit_entry_seq_unique_per_license")]
        indexes = [
            models.Index(fields=["license", "-created_at", "-id"], name="audit_license_created"),
            models.Index(fields=["license", "target", "-created_at"], name="audit_license_target"),
            models.Index(fields=["license", "author_id", "-created_at"], name="audit_license_author"),
        ]

    def __str__(self):
        return f"{self.action} {self.target} {self.entity_name or self.object_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnly("Audit entries are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("Audit entries are append-only.")


class AuditChainHead(models.Model):
    """The last link of one license's chain; its row is locked (`select_for_update`) while entries are appended,
    so concurrent writers of one license queue up instead of forking the chain. Also lets the verifier notice
    rows removed from the end of a chain."""

    license_id = models.BigIntegerField(primary_key=True)
    seq = models.PositiveBigIntegerField(default=0)
    hash = models.CharField(max_length=64, blank=True)
    # Where verification starts after a retention purge (0 and "" when nothing was ever purged).
    anchor_seq = models.PositiveBigIntegerField(default=0)
    anchor_hash = models.CharField(max_length=64, blank=True)

    def __str__(self):
        return f"audit chain of license {self.license_id} at {self.seq}"


class AuditPurge(models.Model):
    """One retention purge of one license's chain: the entries up to `through_seq` (all created before
    `cutoff`) were deleted, and the chain now starts after `through_seq`/`through_hash` (its anchor).

    Inserting this row is the only way to delete entries: the database trigger checks the cut (the entries
    are older than the cutoff, the cutoff is older than `retention_days` before the database's clock), deletes
    them and moves the chain head's anchor. The records themselves are append-only."""

    license_id = models.BigIntegerField()
    through_seq = models.PositiveBigIntegerField()
    through_hash = models.CharField(max_length=64)
    cutoff = models.DateTimeField()
    retention_days = models.PositiveIntegerField()
    purged_at = models.DateTimeField(default=timezone.now)
    deleted = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint("license_id", "through_seq", name="audit_purge_unique_per_license_seq")
        ]

    def __str__(self):
        return f"purge of license {self.license_id} through seq {self.through_seq}"
