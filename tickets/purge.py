"""The purge of the spam and trash silos: the only code that deletes tickets.

A ticket is eligible when it is in `spam` and its last update (`updated_at`) is at least PURGE_SPAM_DAYS old,
or in `trash` and at least PURGE_TRASH_DAYS old. It goes with its events, messages, attachment transactions and
attachments, and their stored files. Nothing else is deleted: the `tickets` and `archive` silos never purge,
audit entries are never touched, and a ticket merged into a purged parent stays (only its link to the
parent is cleared, without touching its `updated_at`).

A run:
1. takes the purge lock (`cache.add` with an expiry, renewed after every batch, released only by its owner):
   one run at a time across all workers; a run that finds the lock taken does nothing;
2. deletes the stored files that an earlier, killed run left listed in PurgedFile;
3. fixes both cutoffs once, then walks the eligible tickets of each silo across licenses in (updated_at, id)
   order, PURGE_BATCH_SIZE at a time (partial index `ticket_purge_silo_updated`);
4. handles each batch in its own short transaction: first a write to the run's row (on SQLite that takes the
   write lock, so the reads that follow are current); then the batch's rows are locked again with the rule
   in the WHERE (`FOR UPDATE SKIP LOCKED` on PostgreSQL), so that a ticket restored or updated since it was
   selected, or being changed right now, is left alone; then its events, messages, attachment transactions and
   attachments go, and finally the tickets, by a DELETE whose WHERE carries the rule again; if that DELETE
   removes fewer rows than were locked, the batch is rolled back whole. The batch's file names are written
   to PurgedFile and the run's per-license counts updated in the same transaction;
5. after each commit (`transaction.on_commit`) the files are deleted from storage, then their PurgedFile rows.

Killed at any moment, it loses nothing that should stay and the next run finishes the job:
- a batch that did not commit deleted nothing (one transaction): its rows and files are all still there,
  since files are only deleted after the commit;
- a batch that committed deleted only tickets that were eligible while it held their row locks, and listed
  their files in PurgedFile in the same commit; the next run deletes those files first (step 2);
- the selection is stateless (the rule and the clock), so the next run finds whatever is still eligible;
- the lock expires by itself (PURGE_LOCK_SECONDS), so a killed run never blocks the next one for long, and the
  next run marks the killed run's record `interrupted`;
- even two runs at once (a lock that expired under a stalled run) stay correct: the row locks and the
  re-checked DELETE let each ticket be deleted, and counted, once.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache, caches
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_redis.cache import RedisCache

from accounts.models import Attachment, AttachmentTransaction
from helpdesk.transactions import unit_of_work
from tickets import totals
from tickets.models import Message, Ticket, TicketEvent
from tickets.models_purge import (
    RUN_FAILED,
    RUN_FINISHED,
    RUN_INTERRUPTED,
    RUN_RUNNING,
    PurgedFile,
    PurgeRun,
)
from tickets.reports import rollups
from tickets.reports.models import TicketMetrics, TicketResolution
from tickets.signals import tickets_purging

logger = logging.getLogger("tickets.purge")

PURGED_SILOS = ("spam", "trash")
LOCK_KEY = "tickets:purge:lock"
FILE_BATCH = 500


class BatchChanged(Exception):
    """The re-checked DELETE removed fewer tickets than were locked: the batch is rolled back."""


# --- the rule ---------------------------------------------------------------------------------------------


def cutoffs(now: datetime | None = None) -> dict[str, datetime]:
    """Per purged silo, the latest `updated_at` that is old enough: exactly N days old purges."""
    now = now or timezone.now()
    days = {"spam": settings.PURGE_SPAM_DAYS, "trash": settings.PURGE_TRASH_DAYS}
    for silo, value in days.items():
        if value < 1:
            raise ImproperlyConfigured(f"PURGE_{silo.upper()}_DAYS must be at least 1, got {value}")
    return {silo: now - timedelta(days=value) for silo, value in days.items()}


def eligible(cutoff: dict[str, datetime]) -> Q:
    return Q(silo="spam", updated_at__lte=cutoff["spam"]) | Q(silo="trash", updated_at__lte=cutoff["trash"])


def count_eligible(cutoff: dict[str, datetime]) -> int:
    # One count per silo: each is a range of the partial index (the OR of both would scan the table).
    return sum(
        Ticket.objects.filter(silo=silo, updated_at__lte=cutoff[silo]).count() for silo in PURGED_SILOS
    )


def eligible_batches(cutoff: dict[str, datetime], batch_size: int) -> Iterator[list[tuple]]:
    """(id, license_id, silo) of eligible tickets, across licenses, batch by batch.

    Keyset order (updated_at, id) per silo, so that a ticket that is skipped (restored meanwhile, or locked
    by a writer) is not selected again in this run and the walk always ends.
    """
    for silo in PURGED_SILOS:
        after = None
        while True:
            query = Ticket.objects.filter(silo=silo, updated_at__lte=cutoff[silo])
            if after is not None:
                query = query.filter(Q(updated_at__gt=after[0]) | Q(updated_at=after[0], id__gt=after[1]))
            rows = list(
                query.order_by("updated_at", "id").values_list("id", "license_id", "updated_at")[:batch_size]
            )
            if not rows:
                break
            after = (rows[-1][2], rows[-1][0])
            yield [(pk, license_id, silo) for pk, license_id, _ in rows]
            if len(rows) < batch_size:
                break


def preview(*, now: datetime | None = None, progress: Callable[[int], None] | None = None) -> dict:
    """What a run would delete now: {license_id: {"spam": n, "trash": n}}. Deletes nothing."""
    cutoff = cutoffs(now)
    result: dict[int, dict[str, int]] = defaultdict(lambda: {"spam": 0, "trash": 0})
    for rows in eligible_batches(cutoff, settings.PURGE_BATCH_SIZE):
        for _, license_id, silo in rows:
            result[license_id][silo] += 1
        if progress:
            progress(len(rows))
    return dict(result)


# --- the lock ---------------------------------------------------------------------------------------------

# Compare-and-delete / compare-and-expire: only the owner's token may release or renew the lock.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
)


class PurgeLock:
    """One purge at a time across processes and machines, in the cache (Redis, or the embedded file cache).

    The token is an integer because Django's Redis cache stores integers as plain digits, which lets the
    Redis path compare it atomically in Lua. The file cache of the embedded default (one machine) cannot
    compare-and-delete atomically; there the database's row locks keep a rare overlap harmless.
    """

    def __init__(self, seconds: int):
        self.seconds = seconds
        self.token = secrets.randbits(62)

    def _redis(self):
        backend = caches["default"]
        if isinstance(backend, RedisCache):
            key = backend.make_and_validate_key(LOCK_KEY)
            return backend.client.get_client(write=True), key
        return None, None

    def acquire(self) -> bool:
        return cache.add(LOCK_KEY, self.token, self.seconds)

    def renew(self) -> bool:
        client, key = self._redis()
        if client is not None:
            return bool(client.eval(_RENEW, 1, key, str(self.token), self.seconds))
        return cache.get(LOCK_KEY) == self.token and cache.touch(LOCK_KEY, self.seconds)

    def release(self) -> None:
        client, key = self._redis()
        if client is not None:
            client.eval(_RELEASE, 1, key, str(self.token))
        elif cache.get(LOCK_KEY) == self.token:
            cache.delete(LOCK_KEY)


# --- files ------------------------------------------------------------------------------------------------


def _storage():
    return Attachment._meta.get_field("file").storage


def delete_files(names: list[str]) -> int:
    """Delete stored files, then their PurgedFile rows; a file that fails stays listed for the next run."""
    storage, done = _storage(), []
    for name in names:
        try:
            storage.delete(name)
        except Exception:
            logger.exception("purge: could not delete the stored file %s (kept for the next run)", name)
            continue
        done.append(name)
    PurgedFile.objects.filter(name__in=done).delete()
    return len(done)


def delete_leftover_files() -> int:
    """Files listed by batches that committed in a run killed before it could delete them."""
    deleted, after = 0, 0
    while True:
        rows = list(
            PurgedFile.objects.filter(pk__gt=after).order_by("pk").values_list("pk", "name")[:FILE_BATCH]
        )
        if not rows:
            return deleted
        deleted += delete_files([name for _, name in rows])
        after = rows[-1][0]


# --- a batch ----------------------------------------------------------------------------------------------


def _before_batch(ids: list) -> None:
    """Called between the selection of a batch and its transaction (a seam for tests)."""


def _raw_delete(queryset) -> int:
    # Without the collector: its lookups of related rows would scan whole tables (Message.transaction has no
    # index); the related rows are deleted explicitly below, by license-scoped queries that use the indexes.
    # The database's foreign keys still guard the result: a relation unknown here fails the batch at commit.
    return queryset._raw_delete(queryset.db)


def _delete_license_rows(license_id: int, ids: list) -> list[str]:
    """Delete what belongs to these tickets of one license (not the tickets). Returns the stored file names."""
    # Every attachment transaction a ticket or its messages use is bound to the ticket (tickets.services).
    txn_ids = list(
        AttachmentTransaction.objects.filter(
            license_id=license_id, bound_type="ticket", bound_id__in=ids
        ).values_list("id", flat=True)
    )
    attachments = Attachment.objects.filter(license_id=license_id, transaction_id__in=txn_ids)
    files = [name for name in attachments.values_list("file", flat=True) if name]
    # Events first: they point at the messages (by the license-led index of events).
    _raw_delete(TicketEvent.objects.filter(license_id=license_id, ticket_id__in=ids))
    # The reports' rows (tickets/reports/): a purged ticket leaves the reports, as it leaves the search; what it
    # added to the rollups is subtracted first (read from the rows about to go).
    rollups.forget(license_id, ids)
    _raw_delete(TicketResolution.objects.filter(license_id=license_id, ticket_id__in=ids))
    _raw_delete(TicketMetrics.objects.filter(license_id=license_id, ticket_id__in=ids))
    # The apps above tickets delete their rows about these tickets (the e-mail app: mail sent and received).
    tickets_purging.send(sender=Ticket, license_id=license_id, ticket_ids=ids)
    _raw_delete(Message.objects.filter(license_id=license_id, ticket_id__in=ids))
    _raw_delete(attachments)
    _raw_delete(AttachmentTransaction.objects.filter(license_id=license_id, id__in=txn_ids))
    for field in ("teams", "tags", "followers"):
        _raw_delete(getattr(Ticket, field).through.objects.filter(ticket_id__in=ids))
    # Merged tickets: a child of a purged parent stays, only its link goes (its updated_at is not a user's).
    Ticket.objects.filter(license_id=license_id, parent_id__in=ids).exclude(id__in=ids).update(parent=None)
    return files


def purge_batch(run: PurgeRun, cutoff: dict[str, datetime], ids: list) -> int:
    """Delete the tickets of `ids` that are still eligible, in one transaction; returns how many went.

    The run's per-license counts are written in the same transaction, so they are exactly what committed.
    """
    _before_batch(ids)
    started = time.monotonic()
    with unit_of_work():
        PurgeRun.objects.filter(pk=run.pk).update(status=RUN_RUNNING)  # the write lock first, on SQLite
        locked = list(
            Ticket.objects.select_for_update(skip_locked=True)
            .filter(pk__in=ids)
            .filter(eligible(cutoff))
            .values_list("id", "license_id", "silo")
        )
        if not locked:
            return 0
        by_license: dict[int, list] = defaultdict(list)
        for pk, license_id, _ in locked:
            by_license[license_id].append(pk)
        files = []
        for license_id, license_ids in by_license.items():
            files += _delete_license_rows(license_id, license_ids)
        deleted = _raw_delete(
            Ticket.objects.filter(pk__in=[row[0] for row in locked]).filter(eligible(cutoff))
        )
        if deleted != len(locked):
            raise BatchChanged(f"{len(locked)} tickets locked but {deleted} deleted")
        # Their totals are counted again; the unit of work raises the licenses' generations (tickets.totals)
        # in one order at its end, so that two overlapping purges cannot deadlock.
        for license_id in by_license:
            totals.changing(license_id)
        if files:
            PurgedFile.objects.bulk_create([PurgedFile(name=name) for name in files])
            transaction.on_commit(lambda: _count_files(run, delete_files(files)))
        new_counts = _added_counts(run.counts, locked, time.monotonic() - started)
        PurgeRun.objects.filter(pk=run.pk).update(
            counts=new_counts, tickets_deleted=run.tickets_deleted + len(locked)
        )
    run.counts, run.tickets_deleted = new_counts, run.tickets_deleted + len(locked)
    return len(locked)


def _count_files(run: PurgeRun, n: int) -> None:
    run.files_deleted += n
    PurgeRun.objects.filter(pk=run.pk).update(files_deleted=run.files_deleted)


def _added_counts(before: dict, locked: list[tuple], seconds: float) -> dict:
    """The run's counts plus a batch's; each license's time is its share of the batch's time."""
    result = {key: dict(value) for key, value in before.items()}
    for _, license_id, silo in locked:
        entry = result.setdefault(str(license_id), {"spam": 0, "trash": 0, "seconds": 0.0})
        entry[silo] += 1
        entry["seconds"] = round(entry["seconds"] + seconds / len(locked), 3)
    return result


# --- a run ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class PurgeResult:
    skipped: bool
    run: PurgeRun | None = None

    @property
    def counts(self) -> dict[int, dict[str, int]]:
        if self.run is None:
            return {}
        return {int(k): {"spam": v["spam"], "trash": v["trash"]} for k, v in sorted(self.run.counts.items())}

    @property
    def tickets_deleted(self) -> int:
        return self.run.tickets_deleted if self.run else 0

    def summary(self) -> dict:
        if self.run is None:
            return {"skipped": True}
        return {
            "skipped": False,
            "run": self.run.pk,
            "status": self.run.status,
            "ticketsDeleted": self.run.tickets_deleted,
            "filesDeleted": self.run.files_deleted,
            "counts": self.run.counts,
        }


def purge_expired(
    *,
    trigger: str = "schedule",
    now: datetime | None = None,
    progress: Callable[[int], None] | None = None,
) -> PurgeResult:
    """One purge run (see the module docstring). Returns skipped=True when another run holds the lock."""
    lock = PurgeLock(settings.PURGE_LOCK_SECONDS)
    if not lock.acquire():
        logger.info("purge: another run holds the lock; nothing done")
        return PurgeResult(skipped=True)
    try:
        return _run(lock, trigger=trigger, now=now, progress=progress)
    finally:
        lock.release()


def _run(lock: PurgeLock, *, trigger: str, now, progress) -> PurgeResult:
    started = time.monotonic()
    cutoff = cutoffs(now)
    stale = PurgeRun.objects.filter(status=RUN_RUNNING).update(
        status=RUN_INTERRUPTED, error="The process stopped before the run finished."
    )
    if stale:
        logger.warning("purge: marked %d earlier run(s) that never finished as interrupted", stale)
    leftover = delete_leftover_files()
    run = PurgeRun.objects.create(
        trigger=trigger,
        spam_cutoff=cutoff["spam"],
        trash_cutoff=cutoff["trash"],
        status=RUN_RUNNING,
        files_deleted=leftover,
    )
    logger.info(
        "purge run %s started (%s): spam updated on or before %s, trash on or before %s",
        run.pk, trigger, cutoff["spam"].isoformat(), cutoff["trash"].isoformat(),
    )  # fmt: skip
    try:
        for batch in eligible_batches(cutoff, settings.PURGE_BATCH_SIZE):
            purge_batch(run, cutoff, [row[0] for row in batch])
            if progress:
                progress(len(batch))
            if not lock.renew():
                raise RuntimeError("the purge lock expired during the run; stopping (the next run goes on)")
    except BaseException as exc:
        run.status, run.error = RUN_FAILED, f"{type(exc).__name__}: {exc}"
        try:
            _finish(run, started)
        except Exception:
            logger.exception("purge run %s: could not record the failure", run.pk)
        logger.exception("purge run %s failed after %d tickets", run.pk, run.tickets_deleted)
        raise
    run.status = RUN_FINISHED
    _finish(run, started)
    return PurgeResult(skipped=False, run=run)


def _finish(run: PurgeRun, started: float) -> None:
    run.finished_at = timezone.now()
    run.refresh_from_db(fields=["files_deleted"])
    PurgeRun.objects.filter(pk=run.pk).update(
        status=run.status,
        error=run.error,
        finished_at=run.finished_at,
        counts=run.counts,
        tickets_deleted=run.tickets_deleted,
    )
    seconds = time.monotonic() - started
    for license_id, entry in sorted(run.counts.items(), key=lambda item: int(item[0])):
        logger.info(
            "purge run %s: license %s lost %d spam and %d trash tickets (%.3f s)",
            run.pk, license_id, entry["spam"], entry["trash"], entry["seconds"],
        )  # fmt: skip
    logger.info(
        "purge run %s %s in %.3f s: %d tickets in %d licenses, %d files",
        run.pk, run.status, seconds, run.tickets_deleted, len(run.counts), run.files_deleted,
    )  # fmt: skip
