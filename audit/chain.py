"""The hash chain: append entries to a license's chain under a row lock, and verify a chain.

hash = HMAC-SHA256(AUDIT_HASH_KEY, canonical JSON of the entry's content + the previous entry's hash).
With the key kept out of the database, even someone who can write to the database cannot forge a
consistent chain; with the default empty key it still catches any edit that does not recompute every
following hash.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import hmac
import json
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.models import AuditChainHead, AuditEntry, AuditPurge


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
    if entry.author_app_name:
        content["author"]["appName"] = entry.author_app_name
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
    anchor_seq: int = 0
    digests: int = 0

    @property
    def ok(self) -> bool:
        return not self.problem


def verify(license_id: int, published: list[dict] | None = None) -> ChainReport:
    """Walk one license's chain in `seq` order and report the first broken link.

    The chain starts after the last retention purge's record (the anchor), never after what the chain head
    claims: the head is an ordinary row. `published` are the license's digests (`audit.digests.load`): each
    published head must still be in the chain with its hash, or have been cut by a purge whose cutoff is after
    it, and each published anchor must be a purge record.
    """
    published = published or []
    head = AuditChainHead.objects.filter(license_id=license_id).first()
    purges = list(AuditPurge.objects.filter(license_id=license_id).order_by("through_seq"))
    anchor_seq, anchor_hash = (purges[-1].through_seq, purges[-1].through_hash) if purges else (0, "")
    report = functools.partial(ChainReport, license_id, anchor_seq=anchor_seq, digests=len(published))
    if head is not None and (head.anchor_seq, head.anchor_hash) != (anchor_seq, anchor_hash):
        return report(0, f"the chain head's anchor is seq {head.anchor_seq} but the retention purges end at seq "
                      f"{anchor_seq} (entries were cut at the oldest end without a purge)")  # fmt: skip
    if problem := _published_cuts(published, purges, anchor_seq):
        return report(0, problem)
    still_published = {record["seq"]: record for record in published if record["seq"] > anchor_seq}
    expected_seq = anchor_seq + 1
    prev_hash = anchor_hash
    count = 0
    rows = AuditEntry.objects.filter(license_id=license_id).order_by("seq").iterator(chunk_size=2000)
    for entry in rows:
        count += 1
        if entry.seq != expected_seq:
            return report(count, f"entry {entry.id}: seq {entry.seq}, expected {expected_seq} "
                          "(a row was deleted or reordered)")  # fmt: skip
        if entry.prev_hash != prev_hash:
            return report(count, f"entry {entry.id} (seq {entry.seq}): does not link to the "
                          "previous entry (a row was deleted, reordered or modified)")  # fmt: skip
        if entry_hash(entry) != entry.hash:
            return report(count, f"entry {entry.id} (seq {entry.seq}): content does not match "
                          "its hash (the row was modified)")  # fmt: skip
        record = still_published.get(entry.seq)
        if record is not None and record["hash"] != entry.hash:
            return report(count, f"entry {entry.id} (seq {entry.seq}): its hash differs from the digest "
                          f"published at {record['publishedAt']} (the chain was rewritten)")  # fmt: skip
        prev_hash = entry.hash
        expected_seq += 1
    last_seq = expected_seq - 1
    if head is not None and (head.seq != last_seq or head.hash != prev_hash):
        return report(count, f"the chain ends at seq {last_seq} but its head is at seq "
                      f"{head.seq} (entries were deleted from the end, or the head was altered)")  # fmt: skip
    if head is None and count:
        return report(count, "entries exist but the chain head is missing")
    if still_published and (newest := max(still_published)) > last_seq:
        record = still_published[newest]
        return report(count, f"the chain ends at seq {last_seq} but the digest published at "
                      f"{record['publishedAt']} shows its head at seq {newest} (entries were cut from the "
                      "newest end)")  # fmt: skip
    return report(count)


def _published_cuts(published: list[dict], purges: list[AuditPurge], anchor_seq: int) -> str:
    """A purge that could not have been a retention purge, a published anchor that no purge recorded, or a
    published entry (a head, an oldest kept entry) cut by a purge whose cutoff was not after it."""
    now = timezone.now()
    for purge in purges:
        allowed = purge.purged_at - datetime.timedelta(days=purge.retention_days)
        if (
            purge.cutoff > allowed
            or purge.purged_at > now + datetime.timedelta(minutes=10)
            or (purge.retention_days < settings.AUDIT_RETENTION_DAYS)
        ):
            return (f"the retention purge through seq {purge.through_seq} (cutoff {purge.cutoff.isoformat()}, "
                    f"{purge.retention_days} days, at {purge.purged_at.isoformat()}) is not one the retention "
                    f"of {settings.AUDIT_RETENTION_DAYS} days allows")  # fmt: skip
    through = {purge.through_seq: purge for purge in purges}
    for record in published:
        anchor = record.get("anchorSeq", 0)
        if anchor and (anchor not in through or through[anchor].through_hash != record.get("anchorHash")):
            return (f"the digest published at {record['publishedAt']} anchors the chain at seq {anchor}, which "
                    "no retention purge recorded (entries were cut at the oldest end)")  # fmt: skip
        known = [(record["seq"], record.get("createdAt"))]
        if anchor + 1 <= record["seq"]:
            known.append((anchor + 1, record.get("firstCreatedAt")))
        for seq, created in known:
            if seq > anchor_seq:
                continue
            # Purged since: by the first purge that reached it, which must have been entitled to.
            purge = next(purge for purge in purges if purge.through_seq >= seq)
            if created is None or datetime.datetime.fromisoformat(created) >= purge.cutoff:
                return (f"entry seq {seq} (created {created}, published at {record['publishedAt']}) was cut by "
                        f"the purge through seq {purge.through_seq}, whose cutoff {purge.cutoff.isoformat()} is "
                        "not after it (entries were cut at the oldest end)")  # fmt: skip
    return ""


def license_ids() -> list[int]:
    ids = set(AuditChainHead.objects.values_list("license_id", flat=True))
    ids |= set(AuditEntry.objects.values_list("license_id", flat=True).distinct())
    return sorted(ids)
