"""The hash chain: append entries to a license's chain under a row lock, and verify a chain.

hash = HMAC-SHA256(AUDIT_HASH_KEY, canonical JSON of the entry's content + the previous entry's hash).
With the key kept out of the database, even someone who can write to the database cannot forge a
consistent chain; with the default empty key it still catches any edit that does not recompute every
following hash.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import hmac
import json
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.models import AuditChainHead, AuditEntry


def canonical(entry: AuditEntry) -> bytes:
    content = {
        "ID": str(entry.id),
        "licenseID": entry.license_id,
        "seq": entry.seq,
        "createdAt": entry.created_at.isoformat(timespec="microseconds"),
        "action": entry.action,
        "target": entry.target,
        "objectID": entry.object_id,
        "entityName": entry.entity_name,
        "author": {
            "type": entry.author_type,
            "ID": str(entry.author_id) if entry.author_id else None,
            "email": entry.author_email,
            "ip": entry.author_ip,
            "userAgent": entry.author_user_agent,
        },
        "changes": entry.changes,
        "prevHash": entry.prev_hash,
    }
    if entry.author_account_id is not None:
        # Only when set: entries written before the field existed keep the content (and hash) they had.
        content["author"]["accountID"] = str(entry.author_account_id)
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def entry_hash(entry: AuditEntry) -> str:
    key = getattr(settings, "AUDIT_HASH_KEY", "").encode()
    return hmac.new(key, canonical(entry), hashlib.sha256).hexdigest()


def locked_head(license_id: int) -> AuditChainHead:
    # ON CONFLICT DO NOTHING: two first writers of a license do not fail, the second waits for the first.
    AuditChainHead.objects.bulk_create([AuditChainHead(license_id=license_id)], ignore_conflicts=True)
    return AuditChainHead.objects.select_for_update().get(license_id=license_id)


def append(entries: Iterable[AuditEntry]) -> list[AuditEntry]:
    """Link and insert entries (in order) at the ends of their licenses' chains, in the current transaction."""
    by_license: dict[int, list[AuditEntry]] = {}
    for entry in entries:
        by_license.setdefault(entry.license_id, []).append(entry)
    written = []
    with transaction.atomic(savepoint=False):
        for license_id in sorted(by_license):  # one lock order everywhere: no deadlocks between writers
            head = locked_head(license_id)
            # Stamped under the lock, so createdAt order is chain order (also within one transaction).
            now = timezone.now()
            for offset, entry in enumerate(by_license[license_id]):
                entry.created_at = now + datetime.timedelta(microseconds=offset)
                head.seq += 1
                entry.seq = head.seq
                entry.prev_hash = head.hash
                entry.hash = entry_hash(entry)
                head.hash = entry.hash
            AuditEntry.objects.bulk_create(by_license[license_id])
            AuditChainHead.objects.filter(pk=license_id).update(seq=head.seq, hash=head.hash)
            written.extend(by_license[license_id])
    return written


@dataclasses.dataclass
class ChainReport:
    license_id: int
    entries: int
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem


def verify(license_id: int) -> ChainReport:
    """Walk one license's chain in `seq` order and report the first broken link."""
    head = AuditChainHead.objects.filter(license_id=license_id).first()
    expected_seq = (head.anchor_seq if head else 0) + 1
    prev_hash = head.anchor_hash if head else ""
    count = 0
    rows = AuditEntry.objects.filter(license_id=license_id).order_by("seq").iterator(chunk_size=2000)
    for entry in rows:
        count += 1
        if entry.seq != expected_seq:
            return ChainReport(license_id, count, f"entry {entry.id}: seq {entry.seq}, expected {expected_seq} "
                               "(a row was deleted or reordered)")  # fmt: skip
        if entry.prev_hash != prev_hash:
            return ChainReport(license_id, count, f"entry {entry.id} (seq {entry.seq}): does not link to the "
                               "previous entry (a row was deleted, reordered or modified)")  # fmt: skip
        if entry_hash(entry) != entry.hash:
            return ChainReport(license_id, count, f"entry {entry.id} (seq {entry.seq}): content does not match "
                               "its hash (the row was modified)")  # fmt: skip
        prev_hash = entry.hash
        expected_seq += 1
    last_seq = expected_seq - 1
    if head is not None and (head.seq != last_seq or head.hash != prev_hash):
        return ChainReport(license_id, count, f"the chain ends at seq {last_seq} but its head is at seq "
                           f"{head.seq} (entries were deleted from the end, or the head was altered)")  # fmt: skip
    if head is None and count:
        return ChainReport(license_id, count, "entries exist but the chain head is missing")
    return ChainReport(license_id, count)


def license_ids() -> list[int]:
    ids = set(AuditChainHead.objects.values_list("license_id", flat=True))
    ids |= set(AuditEntry.objects.values_list("license_id", flat=True).distinct())
    return sorted(ids)
