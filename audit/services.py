"""The one sanctioned removal of audit entries: retention (AUDIT_RETENTION_DAYS; 0, the default, keeps them
forever). Nothing else deletes entries; the ticket purge never touches them."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from audit.chain import locked_head
from audit.models import AuditChainHead, AuditEntry


def audit_entries_purge(*, now: datetime.datetime | None = None, batch_size: int = 1000) -> int:
    """Delete entries older than the retention period, oldest first, in bounded batches; return how many.

    Each license's chain then starts at an anchor (the last purged entry's seq and hash, kept in its chain
    head), so `verify_audit_chain` still proves the remaining entries complete and unaltered.
    """
    days = settings.AUDIT_RETENTION_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - datetime.timedelta(days=days)
    licenses = (
        AuditEntry.objects.filter(created_at__lt=cutoff).values_list("license_id", flat=True).distinct()
    )
    purged = 0
    for license_id in sorted(set(licenses)):
        while batch := _purge_batch(license_id, cutoff, batch_size):
            purged += batch
    return purged


@transaction.atomic
def _purge_batch(license_id: int, cutoff: datetime.datetime, batch_size: int) -> int:
    locked_head(license_id)
    old = AuditEntry.objects.filter(license_id=license_id, created_at__lt=cutoff).order_by("seq")
    last = old.values("seq", "hash")[batch_size - 1 : batch_size].first() or old.values("seq", "hash").last()
    if last is None:
        return 0
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # the trigger lets this transaction (only) delete
            cursor.execute("SELECT set_config('helpdesk.audit_purge', 'on', true)")
    # A plain queryset: AuditEntry's own refuses to delete.
    deleted = (
        models.QuerySet(AuditEntry)
        .filter(license_id=license_id, seq__lte=last["seq"])
        ._raw_delete(connection.alias)
    )
    AuditChainHead.objects.filter(pk=license_id).update(anchor_seq=last["seq"], anchor_hash=last["hash"])
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('helpdesk.audit_purge', 'off', true)")
    return deleted
