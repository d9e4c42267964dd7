"""The writers' entry point, `changing`, and the bookkeeping the unit of work finishes before its commit."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db import connections, router, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from helpdesk.transactions import before_commit, current_unit
from tickets.models import SearchGeneration
from tickets.totals import registry
from tickets.totals.keys import COUNT_TTL_SECONDS, count_key, latest_key, step_key

MAX_CARRIED_TICKETS = 100  # a write declaring more tickets drops the totals instead of re-testing them


def changing(license_id: int, ticket_ids=None, *, new: bool = False) -> None:
    """Declare, inside the write's unit of work, the license's tickets the write changes.

    `ticket_ids`: tickets about to change (call once their rows are locked, before changing them), or with
    `new` about to be created (they matched no filter set before). None: the write changes the license's
    tickets in ways it does not list (a purge); their totals are counted again after it."""
    writes = _open(license_id)
    if ticket_ids is None:
        writes.exact = False
    elif new:
        writes.declared.update(ticket_ids)
        if writes.exact:
            _load_sets(writes, license_id)
    else:
        _declare_changing(writes, license_id, ticket_ids)


def touched(license_id: int, ticket_id=None) -> None:
    """A ticket (or, with no ID, something its filters read) changed: the model signals' entry (`wiring`)."""
    uow = _current()
    if uow is not None:
        writes = uow.license(license_id)
        if ticket_id is None or ticket_id not in writes.declared:
            writes.exact = False
        return
    # Outside a unit of work (a save or cascade in a shell, a bare atomic block): raise it now, in the change's
    # own transaction (or its own, in autocommit: the change is committed already and no carry starts from it).
    _bump(license_id, carry=False)


# --- the unit of work's bookkeeping ---------------------------------------------------------------------


@dataclass
class _LicenseWrites:
    sets: dict | None = None  # digest -> (sql, params, count ms, last used) as registered at the start
    declared: set = field(default_factory=set)  # ticket IDs changed or created
    before: list | None = None  # per set: rows among the declared tickets before the change
    seen: set = field(default_factory=set)  # the generations the before-tests ran at
    exact: bool = True


@dataclass
class _UnitOfWork:
    commits: bool  # the transaction commits right after the unit's callbacks (helpdesk.transactions.Unit)
    licenses: dict = field(default_factory=dict)  # license ID -> _LicenseWrites

    def license(self, license_id: int) -> _LicenseWrites:
        if license_id not in self.licenses:
            self.licenses[license_id] = _LicenseWrites()
        return self.licenses[license_id]


_STATE_KEY = "tickets.totals"


def _current() -> _UnitOfWork | None:
    """The totals' bookkeeping of the open unit of work (helpdesk.transactions), started on first use: its
    `_finish` runs as the unit's last before-commit callback, inside the write's transaction."""
    unit = current_unit()
    if unit is None:
        return None
    uow = unit.state.get(_STATE_KEY)
    if uow is None:
        uow = unit.state[_STATE_KEY] = _UnitOfWork(commits=unit.commits)
        before_commit(lambda: _finish(uow), last=True)
    return uow


def _open(license_id: int) -> _LicenseWrites:
    uow = _current()
    if uow is None:
        raise RuntimeError("ticket writes run in a unit of work (helpdesk.transactions.unit_of_work)")
    return uow.license(license_id)


def _load_sets(writes: _LicenseWrites, license_id: int) -> dict:
    if writes.sets is None:
        writes.sets = registry.registered(license_id)
        writes.before = [0] * len(writes.sets)
    return writes.sets


def _declare_changing(writes: _LicenseWrites, license_id: int, ticket_ids) -> None:
    """Re-test the newly declared tickets against the registered sets, before they change."""
    new = [pk for pk in ticket_ids if pk not in writes.declared]
    writes.declared.update(new)
    if not new or not writes.exact:
        return
    if len(writes.declared) > MAX_CARRIED_TICKETS:
        writes.exact = False
        return
    if _load_sets(writes, license_id):
        seen, *rows = registry.retest(writes.sets, new, license_id=license_id)
        writes.seen.add(seen)
        writes.before = [a + b for a, b in zip(writes.before, rows, strict=True)]


def _bump(license_id: int, *, carry: bool = True) -> tuple[int, int] | None:
    """Raise the license's generation in the current transaction, locking its row (SearchGeneration) until the
    commit; returns (before, after). Inbound mail's storm limit relies on that lock too: a new ticket's
    acknowledgement is confirmed after it (templates_app/inbound/storm.py). Without `carry` (nothing will be
    carried) in one statement, the old value unread, and returns None."""
    now = time.time_ns() // 1000
    row = SearchGeneration.objects.filter(pk=license_id)
    if not carry:
        raised = _raise(license_id, now)
        # the license's first ticket write: its row (or, if a concurrent first write made it, raise it)
        if (
            not raised
            and not SearchGeneration.objects.get_or_create(license_id=license_id, defaults={"value": now})[1]
        ):
            _raise(license_id, now)
        return None
    before = row.select_for_update().values_list("value", flat=True).first()
    if before is None:
        SearchGeneration.objects.get_or_create(license_id=license_id)
        before = row.select_for_update().values_list("value", flat=True).get()
    after = max(before + 1, now)
    row.update(value=after)
    return before, after


# The raise as the ORM compiles `filter(pk=...).update(value=Greatest(F("value") + 1, Value(now)))` on PostgreSQL
# (tests/test_compiled.py), sent as it is: building it cost every ticket write ~1.0 M instructions (reply
# 24.48 -> 23.49 M, PATCH 10.65 -> 9.63 M; bench/README.md "Issue 34: the agent reply, fourth round").
_RAISE_SQL = (
    'UPDATE "tickets_searchgeneration" SET "value" = GREATEST(("tickets_searchgeneration"."value" + %s), %s) '
    'WHERE "tickets_searchgeneration"."license_id" = %s'
)


def _raise(license_id: int, now: int) -> int:
    """Raise the license's generation to at least `now`, in one statement; returns the rows raised (0 or 1)."""
    connection = connections[router.db_for_write(SearchGeneration)]
    if connection.vendor != "postgresql":
        return SearchGeneration.objects.filter(pk=license_id).update(
            value=Greatest(F("value") + 1, Value(now))
        )
    with connection.cursor() as cursor:
        cursor.execute(_RAISE_SQL, [1, now, license_id])
        return cursor.rowcount


def _finish(uow: _UnitOfWork) -> None:
    for license_id in sorted(uow.licenses):  # one lock order for writes touching several licenses
        writes = uow.licenses[license_id]
        if not (writes.exact and writes.sets and writes.declared):
            _bump(license_id, carry=False)  # nothing can be carried
            continue
        before, after = _bump(license_id)
        # Carried only if no other write committed since the before-tests (then they saw the state at `before`),
        # and only if this transaction commits right after this callback: inside a bare atomic() block it goes
        # on, and a later change in it would raise the generation again, leaving `after` a state that never
        # committed.
        if not (writes.seen <= {before} and uow.commits):
            continue
        # The after-tests run here, before the commit: the generation row is locked by the raise above, so no
        # other write to the license can commit before this one, and the declared tickets are locked since
        # their declaration. What these tests see is the state at `after`; stored at the commit, the carried
        # totals are there when the first reader of `after` looks.
        now = registry.retest(writes.sets, sorted(writes.declared, key=str))
        transaction.on_commit(
            lambda lid=license_id, w=writes, b=before, a=after, n=now: _carry(lid, w, b, a, n), robust=True
        )


def _carry(license_id: int, writes: _LicenseWrites, before_gen: int, after_gen: int, after: list) -> None:
    """After the commit: each set's step from `before_gen` to `after_gen`, and its total under `after_gen` where
    the one of `before_gen` is cached."""
    digests = list(writes.sets)
    found = cache.get_many([count_key(license_id, before_gen, d) for d in digests])
    values = {}
    for digest, now, then in zip(digests, after, writes.before, strict=True):
        values[step_key(license_id, before_gen, digest)] = (after_gen, now - then)
        old = found.get(count_key(license_id, before_gen, digest))
        if old is not None:
            values[count_key(license_id, after_gen, digest)] = old + now - then
            values[latest_key(license_id, digest)] = (after_gen, old + now - then)
    cache.set_many(values, COUNT_TTL_SECONDS)
