"""The one sanctioned removal of audit entries: retention (AUDIT_RETENTION_DAYS; 0, the default, keeps them
forever). Nothing else can delete entries (the database refuses, migration 0003); the ticket purge never
touches them."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.chain import locked_head
from audit.models import AuditEntry, AuditPurge

CLOCK_SLACK_MINUTES = 10


def audit_entries_purge(*, batch_size: int = 1000) -> int:
    """Delete entries older than the retention period, oldest first, in bounded batches; return how many.

    Each batch is one `AuditPurge` record: the database trigger checks it (the cut entries are older than the
    cutoff, the cutoff is at least `retention_days` before the database's own clock), deletes the entries and
    moves the license's anchor. The chain then starts at the anchor (the last purged entry's seq and hash), so
    `verify_audit_chain` still proves the remaining entries complete, and the records explain the cut.
    """
    days = settings.AUDIT_RETENTION_DAYS
    if days <= 0:
        return 0
    # A few minutes' slack: the database checks the cutoff against its own clock, which may lag this host's.
    cutoff = timezone.now() - datetime.timedelta(days=days, minutes=CLOCK_SLACK_MINUTES)
    licenses = (
        AuditEntry.objects.filter(created_at__lt=cutoff).values_list("license_id", flat=True).distinct()
    )
    purged = 0
    for license_id in sorted(set(licenses)):
        while batch := _purge_batch(license_id, cutoff, days, batch_size):
            purged += batch
    return purged


@transaction.atomic
def _purge_batch(license_id: int, cutoff: datetime.datetime, days: int, batch_size: int) -> int:
    locked_head(license_id)
    old = AuditEntry.objects.filter(license_id=license_id, created_at__lt=cutoff).order_by("seq")
    # The cut ends before the first entry that is not old enough (a clock step back between two writers can
    # put one among older ones): the database refuses a cut that contains an entry newer than the cutoff.
    newer = AuditEntry.objects.filter(license_id=license_id, created_at__gte=cutoff).order_by("seq").first()
    if newer is not None:
        old = old.filter(seq__lt=newer.seq)
    batch = list(old.values_list("seq", "hash")[:batch_size])
    if not batch:
        return 0
    through_seq, through_hash = batch[-1]
    deleted = AuditEntry.objects.filter(license_id=license_id, seq__lte=through_seq).count()
    AuditPurge.objects.create(
        license_id=license_id,
        through_seq=through_seq,
        through_hash=through_hash,
        cutoff=cutoff,
        retention_days=days,
        deleted=deleted,
    )
    return deleted
