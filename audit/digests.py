"""Chain heads published outside the database, so that a cut at either end of a chain shows.

A chain proves its entries complete between its anchor and its head, but someone who can delete rows and
rewrite the head (a database superuser, a restored older backup) can cut the newest entries, or the oldest
ones and move the anchor, and the shorter chain still verifies. So, as CloudTrail's digest files do, a beat
task appends each license's head (seq, hash, the head entry's time) and anchor (and the time of the oldest
kept entry) to
`AUDIT_DIGEST_DIR/license-<id>.jsonl`, signed with AUDIT_HASH_KEY, and logs the same JSON line (logger
`audit.digest`). `verify_audit_chain` then requires every published head to be still in the chain (or cut by
a recorded retention purge whose cutoff is after it) and every published anchor to be a recorded purge.
Operators point AUDIT_DIGEST_DIR at storage the database host cannot rewrite (a mounted bucket with object
lock, another machine); digests kept next to the database prove little.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from pathlib import Path

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from audit.models import AuditChainHead, AuditEntry

logger = logging.getLogger("audit.digest")


def directory() -> Path:
    return Path(settings.AUDIT_DIGEST_DIR)


def path_of(license_id: int) -> Path:
    return directory() / f"license-{license_id}.jsonl"


def signature(record: dict) -> str:
    content = {key: value for key, value in record.items() if key != "sig"}
    message = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(settings.AUDIT_HASH_KEY.encode(), message, hashlib.sha256).hexdigest()


def publish() -> int:
    """Append one signed line per license whose head or anchor moved since its last line; return how many."""
    head_entry = AuditEntry.objects.filter(license_id=OuterRef("license_id"), seq=OuterRef("seq"))
    first_entry = AuditEntry.objects.filter(license_id=OuterRef("license_id"), seq=OuterRef("anchor_seq") + 1)
    heads = (
        AuditChainHead.objects.filter(seq__gt=0)
        .annotate(
            head_created_at=Subquery(head_entry.values("created_at")[:1]),
            first_created_at=Subquery(first_entry.values("created_at")[:1]),
        )
        .order_by("license_id")
    )
    directory().mkdir(parents=True, exist_ok=True)
    published_at = timezone.now().isoformat(timespec="microseconds")
    written = 0
    for head in heads.iterator(chunk_size=1000):
        record = {
            "licenseID": head.license_id,
            "seq": head.seq,
            "hash": head.hash,
            "createdAt": _iso(head.head_created_at),
            "anchorSeq": head.anchor_seq,
            "anchorHash": head.anchor_hash,
            # The oldest kept entry's time: a later purge may cut it only with a cutoff after it.
            "firstCreatedAt": _iso(head.first_created_at),
        }
        last = _last_record(path_of(head.license_id))
        if last and all(last.get(key) == value for key, value in record.items()):
            continue  # nothing new to prove: the last line still holds
        record["publishedAt"] = published_at
        record["sig"] = signature(record)
        line = json.dumps(record, sort_keys=True, separators=(",", ":"))
        with open(path_of(head.license_id), "a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()
            os.fsync(file.fileno())
        logger.info("audit digest %s", line)
        written += 1
    return written


def _iso(moment) -> str | None:
    return moment.isoformat(timespec="microseconds") if moment else None


def _last_record(path: Path) -> dict | None:
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(0, file.tell() - 4096))
            lines = file.read().splitlines()
    except FileNotFoundError:
        return None
    try:
        return json.loads(lines[-1]) if lines else None
    except ValueError:
        return None


def load(license_id: int) -> tuple[list[dict], list[str]]:
    """The license's published digests, and the problems of lines that cannot be trusted (unreadable, or a
    signature that does not match: the file was edited)."""
    path = path_of(license_id)
    records, problems = [], []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            valid = hmac.compare_digest(str(record.get("sig", "")), signature(record))
        except (ValueError, AttributeError):
            problems.append(f"{path} line {number}: not a digest record")
            continue
        if not valid or record.get("licenseID") != license_id:
            problems.append(
                f"{path} line {number}: its signature does not match (the digest file was edited)"
            )
            continue
        records.append(record)
    return records, problems


def published_license_ids() -> list[int]:
    ids = []
    for path in directory().glob("license-*.jsonl"):
        try:
            ids.append(int(path.stem.removeprefix("license-")))
        except ValueError:
            continue
    return ids
