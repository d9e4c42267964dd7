"""Exact totals for ticket search: cached per license generation and filter set, carried across writes.

Reading (`cached_count`). A count is cached under the license, the license's *generation* and a digest of the
filtered query's SQL (relative dates already resolved). The generation lives in PostgreSQL, not in the cache:
`SearchGeneration.value` (a row per license), raised by every transaction that changes the license's tickets,
in that transaction. A miss counts with one statement that also reads the generation, so the count and the
generation come from the same snapshot and the entry stored under generation G is the exact count at G (not
"at least G"). A request looks its entry up under the generation its authentication loaded.

Writing. Every write to tickets runs in a unit of work (helpdesk.transactions.unit_of_work, the services'
decorator); its bookkeeping here, finished by the unit's last before-commit callback (after the audit's and any
other, so every write takes its final locks in one order), is the one place that keeps totals:
- a service declares, once it holds the rows' locks and before it changes them, the tickets it will change
  (`changing`) or create (`created`); a change of a license's teams, tags or agents that reaches its tickets
  without such a declaration (a cascade) only drops the totals (`drop`);
- at its end, in the write's transaction, the unit of work raises each license's generation (G → G'), locking
  the generation rows in license ID order, after every other lock of the write (docs/architecture.md, "Locks
  are taken in one order"), and so drops every total;
- and, for an exact declared write, it *carries* totals over: each license keeps a small registry (in the
  cache) of the filter sets whose count was expensive; `changing` re-tests the declared tickets against them in
  one statement that also reads the generation (how many rows each set counts among those tickets, before the
  change, at generation G0). At the end the generation is raised from G to G'; only if G0 = G (no other write
  committed in between, so the re-test saw the tickets as they are at G, links included) is anything carried:
  still inside the transaction, with the generation row locked by the raise (so no other write of the license
  can commit before this one), one statement re-tests the same tickets again, which is the state at G' (a unit of
  work inside a bare atomic() block, whose transaction goes on after it, carries nothing); right after the
  commit every entry cached under G becomes, under G', its count plus the difference, and each set gets a
  *step* (G -> G', difference). New tickets (`created`) counted nowhere before. A miss rolls the set's newest
  known count forward through the steps (`_roll_forward`): a count that takes longer than the time between two
  writes (300-500 ms for common words at 1M tickets, against 200 ms between writes at 5/s) is stored under a
  generation the next write has already left; without the steps it would never be carried. A step exists only
  for an exact write, so a drop ends every chain.
The registry (`_register`) admits a set on its second expensive count (or at once when very expensive),
so that one-off searches do not push out the ones a license runs all day; idle sets, then cheap ones, leave it.
A miss is counted by one request at a time per filter set; the others wait for its count (`_wait_for_count`).
A lost cache write, a Redis outage or a generation that moved on only mean a miss later: nothing that decides
what is exact is kept in Redis. A unit of work nested in another (a bulk action of the admin calls the
services in its own unit of work) is part of the outer one: one bookkeeping, one raise of the generation.

By construction: model signals (tickets.apps) report every saved ticket, every change of a ticket's teams, tags
or followers, and the deletion of a team, tag or agent (whose cascades change tickets without a ticket save).
Inside a unit of work an undeclared change turns that license's write into a plain drop; outside any unit of
work the signal raises the generation itself. `QuerySet.update()` sends no
signal: the services use it only on tickets they declared, and a test walks every write path.

Why the generation is in PostgreSQL: the earlier design kept it in Redis, and an increment lost during an
outage served a stale total once Redis came back. The new value is at least the current time in microseconds,
so a generation is not reused after a database restore rewinds the column; still flush the cache (or change
CACHE_KEY_PREFIX) after a restore. Why in a row of its own, not a column of the license: a team's or an agent's
deletion locks the license row and then, through its cascade, tickets; a ticket write locks its ticket and, at
its end, the generation. With the generation on the license row the two deadlocked (PostgreSQL aborted one).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from helpdesk.transactions import before_commit, current_unit
from tickets.models import SearchGeneration, Ticket

log = logging.getLogger(__name__)

COUNT_TTL_SECONDS = 300
COUNT_LOCK_SECONDS = 10  # one request counts a filter set at a time; the lock frees itself after this
COUNT_WAIT_SECONDS = 3  # then the others count too
REGISTRY_TTL_SECONDS = 3600
SEEN_SECONDS = 3600  # a set's second expensive count within this time registers it
ADMIT_AT_ONCE_FACTOR = 20  # a count this many times TICKET_COUNT_CARRY_MIN_MS registers its set at once
IDLE_SECONDS = 600  # a registered set not used for this long is the first to go
MARK_EVERY_SECONDS = 60
STEP_WAIT_MS = 30  # how long a reader waits for the step of a write that has just committed (`_await_step`)
STEP_WAIT_RECENT_MS = 200
MAX_CARRIED_TICKETS = 100  # a write declaring more tickets drops the totals instead of re-testing them
MAX_STEPS = 50  # writes a reader's roll forward may walk through


def generation(license_id: int) -> int:
    return SearchGeneration.objects.filter(pk=license_id).values_list("value", flat=True).first() or 0


def _loaded_generation(license) -> int:
    """The generation loaded with the request's license (the authentication joins it), else read now."""
    try:
        return license.search_generation.value
    except SearchGeneration.DoesNotExist:  # no ticket of the license was ever written
        return 0


_GENERATION_SQL = f"COALESCE((SELECT value FROM {SearchGeneration._meta.db_table} WHERE license_id = %s), 0)"


def _key(license_id: int, generation: int, digest: str) -> str:
    return f"tickets:count:{license_id}:{generation}:{digest}"


def _registry_key(license_id: int) -> str:
    # v2: entries are (sql, params, count ms, last used); a process of the previous release reads its own key
    return f"tickets:countsets2:{license_id}"


def _step_key(license_id: int, generation: int, digest: str) -> str:
    """-> (the next generation, the set's count difference): written by the write that left `generation`."""
    return f"tickets:countstep:{license_id}:{generation}:{digest}"


def _counting_key(license_id: int, digest: str) -> str:
    return f"tickets:counting:{license_id}:{digest}"


def _seen_key(license_id: int, digest: str) -> str:
    return f"tickets:countseen:{license_id}:{digest}"


def _latest_key(license_id: int, digest: str) -> str:
    """-> (generation, count): the newest count known of the set, where a reader's roll forward starts."""
    return f"tickets:countlatest:{license_id}:{digest}"


# --- reading ----------------------------------------------------------------------------------------------


def cached_count(queryset, license) -> int:
    """The exact count of `queryset` (tickets, or a team inbox's TicketTeam links) at the license's generation.

    `license` is the caller's License row as loaded for this request. One cache round trip when cached; an
    unreachable cache is a miss.
    """
    column = "pk" if queryset.model is Ticket else "ticket_id"
    # The rows' ticket IDs under one name, which the writes' re-test filters on (`_retest`).
    sql, params = queryset.order_by().values(counted_ticket=F(column)).query.sql_with_params()
    digest = hashlib.sha1(f"{sql}|{params!r}".encode(), usedforsecurity=False).hexdigest()
    wanted = _loaded_generation(license)
    found = cache.get(_key(license.pk, wanted, digest))
    if found is not None:
        _keep_registered(license.pk, digest)
        return found
    rolled = _roll_forward(license.pk, digest, wanted)
    if rolled is not None:
        return rolled
    # One count at a time per filter set: the others wait for it (a common word's count takes ~0.5 s at 1M
    # tickets; eight clients missing together would otherwise run it eight times on the same cores).
    counting = _counting_key(license.pk, digest)
    locked = cache.add(counting, 1, COUNT_LOCK_SECONDS)
    if locked is False:  # (None: the cache is away; count)
        waited = _wait_for_count(license.pk, digest, wanted, counting)
        if waited is not None:
            return waited
        locked = cache.add(counting, 1, COUNT_LOCK_SECONDS)  # the other count ended without an answer for us
    try:
        return _count(license.pk, digest, sql, params)
    finally:
        if locked:  # only a lock this request took
            cache.delete(counting)


def _count(license_id: int, digest: str, sql: str, params) -> int:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_GENERATION_SQL}, (SELECT COUNT(*) FROM ({sql}) s)", [license_id, *params])
        current, count = cursor.fetchone()
    cache.set_many(
        {_key(license_id, current, digest): count, _latest_key(license_id, digest): (current, count)},
        COUNT_TTL_SECONDS,
    )
    took = (time.perf_counter() - started) * 1000
    if took >= settings.TICKET_COUNT_CARRY_MIN_MS:
        _register(license_id, digest, sql, params, took)
    return count


def _wait_for_count(license_id: int, digest: str, wanted: int, counting: str) -> int | None:
    """Another request is counting this set: its count, once stored, if it is at `wanted` or later (a later
    one is as good an answer: a write committed during this request). None when it gave up or went away."""
    deadline = time.monotonic() + COUNT_WAIT_SECONDS
    pause = 0.005
    while True:
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
        latest = cache.get(_latest_key(license_id, digest))
        if latest is not None and latest[0] >= wanted:
            return latest[1]
        if cache.get(counting) is None:  # done (its count belongs to an older generation) or gone
            return _roll_forward(license_id, digest, wanted)
        if time.monotonic() >= deadline:
            return None


def _roll_forward(license_id: int, digest: str, wanted: int) -> int | None:
    """The set's newest known count moved forward through the writes' steps to generation `wanted`, or None.

    A count that takes longer than the time between two writes would otherwise never be carried: by the time
    it is stored, the next write has looked for it and not found it. A step exists only for an exact write, so
    a missing one (a drop, a lost cache write) ends the walk and the caller counts."""
    latest = cache.get(_latest_key(license_id, digest))
    if latest is None:
        return None
    generation, count = latest
    awaited = False
    for _ in range(MAX_STEPS):
        if generation >= wanted:
            break
        step = cache.get(_step_key(license_id, generation, digest))
        if step is None and not awaited:
            awaited = True
            step = _await_step(license_id, digest, generation, wanted)
        if step is None:
            return None
        generation, count = step[0], count + step[1]
    if generation < wanted:
        return None
    # (beyond `wanted`: a write committed during this request; its newer total is as good an answer)
    cache.set_many(
        {_key(license_id, generation, digest): count, _latest_key(license_id, digest): (generation, count)},
        COUNT_TTL_SECONDS,
    )
    return count


def _await_step(license_id: int, digest: str, generation: int, wanted: int):
    """The step from `generation`, if a write that just committed is about to store it; else None.

    A write stores its steps right after its commit, so a reader that authenticated in between sees the new
    generation a millisecond or two before the step. For a set slower to count than the wait (a registered one:
    only those get steps), when the wanted generation was raised within the last STEP_WAIT_RECENT_MS, the
    reader waits up to STEP_WAIT_MS for it instead of counting. Generations are raised to the time in
    microseconds, which is how "recent" is told; a skewed clock only means a wait too many or too few."""
    if time.time_ns() // 1000 - wanted > STEP_WAIT_RECENT_MS * 1000:
        return None
    entry = (cache.get(_registry_key(license_id)) or {}).get(digest)
    if entry is None or entry[2] < 2 * STEP_WAIT_MS:
        return None
    deadline = time.monotonic() + STEP_WAIT_MS / 1000
    while time.monotonic() < deadline:
        time.sleep(0.002)
        step = cache.get(_step_key(license_id, generation, digest))
        if step is not None:
            return step
    return None


def _register(license_id: int, digest: str, sql: str, params, took_ms: float) -> None:
    """Remember an expensive filter set so that writes carry its total over.

    Admission: a set counted once and never again (a rare word) must not push out the sets a license searches
    all day, so a set is admitted on its second expensive count within the hour, or at once when its count took
    ADMIT_AT_ONCE_FACTOR times the threshold. Eviction: the sets idle for over IDLE_SECONDS go first, then the
    others, the cheapest first within each (`_keep_registered` marks a set used when its total is found cached
    under the request's generation)."""
    at_once = took_ms >= settings.TICKET_COUNT_CARRY_MIN_MS * ADMIT_AT_ONCE_FACTOR
    if not at_once and cache.add(_seen_key(license_id, digest), 1, SEEN_SECONDS) is not False:
        return  # first sighting (or the cache is away)
    now = time.time()
    sets = cache.get(_registry_key(license_id)) or {}
    sets[digest] = (sql, tuple(params), took_ms, now)
    if len(sets) > settings.TICKET_COUNT_CARRY_SETS:
        # the sets idle for over IDLE_SECONDS first, then the others; within each, the cheapest first
        ranked = sorted(sets, key=lambda d: (now - sets[d][3] < IDLE_SECONDS, sets[d][2], sets[d][3]))
        for evicted in ranked[: len(sets) - settings.TICKET_COUNT_CARRY_SETS]:
            del sets[evicted]
    cache.set(_registry_key(license_id), sets, REGISTRY_TTL_SECONDS)
    _marked[(license_id, digest)] = time.monotonic()


_marked: dict = {}  # (license ID, digest) -> when this process last marked the set used in the registry


def _keep_registered(license_id: int, digest: str) -> None:
    """A cached total was served: at most once a minute per process, mark its set (if registered) used; no cache
    round trip the first time a process serves it."""
    if len(_marked) > 10_000:
        _marked.clear()
    now = time.monotonic()
    last = _marked.setdefault((license_id, digest), now)  # first seen: marked after a minute of use
    if now - last < MARK_EVERY_SECONDS:
        return
    _marked[(license_id, digest)] = now
    sets = cache.get(_registry_key(license_id))
    if sets and digest in sets:
        sql, params, took_ms, _ = sets[digest]
        sets[digest] = (sql, params, took_ms, time.time())
        cache.set(_registry_key(license_id), sets, REGISTRY_TTL_SECONDS)


def _retest(sets: dict, ticket_ids, license_id: int | None = None) -> list[int]:
    """In one statement: for each filter set, how many of its rows belong to `ticket_ids`; with `license_id`,
    the license's generation first (same snapshot)."""
    prepared = [Ticket._meta.pk.get_db_prep_value(i, connection) for i in ticket_ids]
    marks = ", ".join(["%s"] * len(prepared))
    columns, params = [], []
    if license_id is not None:
        columns.append(_GENERATION_SQL)
        params.append(license_id)
    for sql, set_params, *_ in sets.values():
        columns.append(f"(SELECT COUNT(*) FROM ({sql}) s WHERE s.counted_ticket IN ({marks}))")
        params += [*set_params, *prepared]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)}", params)
        return list(cursor.fetchone())


# --- writing ----------------------------------------------------------------------------------------------


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


_STATE_KEY = "tickets.counts"


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
        writes.sets = cache.get(_registry_key(license_id)) or {}
        writes.before = [0] * len(writes.sets)
    return writes.sets


def changing(license_id: int, ticket_ids) -> None:
    """Declare tickets about to change. Call once their rows are locked, before changing them."""
    writes = _open(license_id)
    new = [pk for pk in ticket_ids if pk not in writes.declared]
    writes.declared.update(new)
    if not new or not writes.exact:
        return
    if len(writes.declared) > MAX_CARRIED_TICKETS:
        writes.exact = False
        return
    if _load_sets(writes, license_id):
        seen, *rows = _retest(writes.sets, new, license_id=license_id)
        writes.seen.add(seen)
        writes.before = [a + b for a, b in zip(writes.before, rows, strict=True)]


def created(license_id: int, ticket_id) -> None:
    """Declare a new ticket (before it is saved): it matched no filter set before."""
    writes = _open(license_id)
    writes.declared.add(ticket_id)
    if writes.exact:
        _load_sets(writes, license_id)


def drop(license_id: int) -> None:
    """The write changes the license's tickets in ways not declared: its totals are counted again."""
    _open(license_id).exact = False


def touched(license_id: int, ticket_id=None) -> None:
    """A ticket (or, with no ID, something its filters read) changed: the signal receivers' entry."""
    uow = _current()
    if uow is not None:
        writes = uow.license(license_id)
        if ticket_id is None or ticket_id not in writes.declared:
            writes.exact = False
        return
    # Outside a unit of work (a save or cascade in a shell, a bare atomic block): raise it now, in the change's
    # own transaction (or its own, in autocommit: the change is committed already and no carry starts from it).
    _bump(license_id, carry=False)


def _bump(license_id: int, *, carry: bool = True) -> tuple[int, int] | None:
    """Raise the license's generation in the current transaction, locking its row (SearchGeneration) until the
    commit; returns (before, after). Without `carry` (nothing will be carried) in one statement, the old value
    unread, and returns None."""
    now = time.time_ns() // 1000
    row = SearchGeneration.objects.filter(pk=license_id)
    if not carry:
        raised = row.update(value=Greatest(F("value") + 1, Value(now)))
        # the license's first ticket write: its row (or, if a concurrent first write made it, raise it)
        if (
            not raised
            and not SearchGeneration.objects.get_or_create(license_id=license_id, defaults={"value": now})[1]
        ):
            row.update(value=Greatest(F("value") + 1, Value(now)))
        return None
    before = row.select_for_update().values_list("value", flat=True).first()
    if before is None:
        SearchGeneration.objects.get_or_create(license_id=license_id)
        before = row.select_for_update().values_list("value", flat=True).get()
    after = max(before + 1, now)
    row.update(value=after)
    return before, after


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
        now = _retest(writes.sets, sorted(writes.declared, key=str))
        transaction.on_commit(
            lambda lid=license_id, w=writes, b=before, a=after, n=now: _carry(lid, w, b, a, n), robust=True
        )


def _carry(license_id: int, writes: _LicenseWrites, before_gen: int, after_gen: int, after: list) -> None:
    """After the commit: each set's step from `before_gen` to `after_gen`, and its total under `after_gen` where
    the one of `before_gen` is cached."""
    digests = list(writes.sets)
    found = cache.get_many([_key(license_id, before_gen, d) for d in digests])
    values = {}
    for digest, now, then in zip(digests, after, writes.before, strict=True):
        values[_step_key(license_id, before_gen, digest)] = (after_gen, now - then)
        old = found.get(_key(license_id, before_gen, digest))
        if old is not None:
            values[_key(license_id, after_gen, digest)] = old + now - then
            values[_latest_key(license_id, digest)] = (after_gen, old + now - then)
    cache.set_many(values, COUNT_TTL_SECONDS)
