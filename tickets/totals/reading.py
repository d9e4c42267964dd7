"""The readers' entry point, `exact_count`: a search's exact total, from the cache unless a write made it stale."""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.core.cache import cache
from django.db import connections, transaction
from django.db.models import F

from accounts.models import License
from helpdesk.replicas import read_alias
from tickets.models import SearchGeneration, Ticket
from tickets.totals import registry
from tickets.totals.keys import (
    COUNT_TTL_SECONDS,
    GENERATION_SQL,
    count_key,
    counting_key,
    latest_key,
    step_key,
)

COUNT_LOCK_SECONDS = 10  # one request counts a filter set at a time; the lock frees itself after this
COUNT_WAIT_SECONDS = 3  # then the others count too
STEP_WAIT_MS = 30  # how long a reader waits for the step of a write that has just committed (`_await_step`)
STEP_WAIT_RECENT_MS = 200
MAX_STEPS = 50  # writes a reader's roll forward may walk through


def exact_count(
    queryset, license, digest: str | None = None, *, cached: bool = True, generation: int | None = None
) -> int:
    """The exact count of `queryset` (tickets, or a team inbox's TicketTeam links) at the license's generation.

    `license` is the caller's License row as loaded for this request (its generation joined by the API's
    authentication, see `wiring.py`). One cache round trip when cached; an unreachable cache is a miss.
    `digest` names the counted set in the cache (TicketFilterSet.count_digest: equal digests, equal SQL);
    without it, a digest of the compiled SQL. With it, the SQL is compiled only on a miss, and `queryset` may be
    a function that builds it, called only then (a search's page bound into its shape's SQL builds none; a
    full-text total's queryset over the tickets' copy cost ~160 us to build, TicketFilterSet.count_queryset).
    Instead of a queryset, (or a function giving) the `count_sql` of one.

    `cached=False`: a set that no later request names (a bound that moves with the clock, `createdDateFrom=-30d`:
    a new moment each microsecond) is counted, with no cache round trip, lock or entry (its entry would never be
    read): the same exact count as a miss's. Measured (bench/README.md, issue 34, `search3` branch): a miss's
    round trips, lock and generation read: `createdDateFrom=-30d` 8.64 M -> 6.41 M instructions per search
    (bench/cpu.py --instructions, 100k set).

    `generation`: the license's generation, read by a statement the caller ran anyway (the search's page, when
    `generation_unloaded`), instead of `_loaded_generation`'s read. Any generation will do: an entry stored
    under one is the exact count at it.
    """
    if not cached:
        return _counted(*_sql(_built(queryset)))
    sql = params = None
    if digest is None:
        sql, params, digest = _prepared(_built(queryset))
    wanted = _loaded_generation(license) if generation is None else generation
    found = cache.get(count_key(license.pk, wanted, digest))
    if found is not None:
        registry.keep_registered(license.pk, digest)
        return found
    if sql is None:
        sql, params = _sql(_built(queryset))
    return _missed(license, sql, params, digest, wanted)


def _built(queryset):
    return queryset() if callable(queryset) else queryset


def exact_counts(querysets, license, digests=None) -> list[int]:
    """`exact_count` of each queryset, those cached under the license's generation found in one cache round
    trip (a list of saved views: 20 filter sets, one GET_MANY instead of 20 GETs; on the loaded 2-core box a
    round trip took 6-9 ms, bench/README.md "Views' counts"); each miss as `exact_count` counts it. `digests`
    as `exact_count`'s, one per queryset (None: a digest of its SQL); a queryset may be a function, as there."""
    querysets = list(querysets)
    digests = [
        _prepared(_built(queryset))[2] if digest is None else digest
        for queryset, digest in zip(querysets, digests or [None] * len(querysets), strict=True)
    ]
    wanted = _loaded_generation(license)
    keys = [count_key(license.pk, wanted, digest) for digest in digests]
    found = cache.get_many(keys) if keys else {}
    counts = []
    for key, queryset, digest in zip(keys, querysets, digests, strict=True):
        if found.get(key) is not None:
            registry.keep_registered(license.pk, digest)
            counts.append(found[key])
        else:
            counts.append(_missed(license, *_sql(_built(queryset)), digest, wanted))
    return counts


def _prepared(queryset) -> tuple[str, tuple, str]:
    """The counted query's SQL, its parameters and their digest (the cache key's part)."""
    sql, params = _sql(queryset)
    return sql, params, hashlib.sha1(f"{sql}|{params!r}".encode(), usedforsecurity=False).hexdigest()


def count_sql(queryset) -> tuple[str, tuple]:
    """The SQL (and its parameters) that counts `queryset`'s tickets: what `exact_count` runs on a miss, and what
    it takes instead of a queryset (tickets.search_shapes binds it into a shape)."""
    return _sql(queryset)


def _sql(queryset) -> tuple[str, tuple]:
    if isinstance(queryset, tuple):  # (SQL, parameters): count_sql's, already bound
        return queryset
    column = "pk" if queryset.model is Ticket else "ticket_id"
    # The rows' ticket IDs under one name, which the writes' re-test filters on (`registry.retest`).
    return queryset.order_by().values(counted_ticket=F(column)).query.sql_with_params()


def _missed(license, sql: str, params, digest: str, wanted: int) -> int:
    """Not cached under `wanted`: rolled forward through the writes' steps, or counted (one request at a time)."""
    rolled = _roll_forward(license.pk, digest, wanted)
    if rolled is not None:
        return rolled
    # One count at a time per filter set: the others wait for it (a common word's count takes ~0.5 s at 1M
    # tickets; eight clients missing together would otherwise run it eight times on the same cores).
    counting = counting_key(license.pk, digest)
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


def generation_unloaded(license) -> bool:
    """Whether `exact_count` would read the license's generation by a statement of its own (a caller served from
    its process's copy, or a designated read from a replica): a statement that runs anyway may read it instead
    and pass it as `generation`.
    Measured (bench/README.md, issue 34, `search4` branch): the inbox's own read of it, folded into its page's
    statement, 3.62 M -> 3.48 M instructions per search (bench/cpu.py --instructions, 100k set)."""
    return read_alias() != "default" or not License.search_generation.related.is_cached(license)


def _loaded_generation(license) -> int:
    """The generation loaded with the request's license (the authentication joins it), else read now.

    On a replica (helpdesk.replicas) the replica's own: the page comes from the replica's snapshot, and its total
    must be the count at that snapshot, not at the primary's newer generation (one more indexed read)."""
    if read_alias() != "default":
        found = SearchGeneration.objects.filter(license_id=license.pk).values_list("value", flat=True).first()
        return found or 0
    loaded = License.search_generation.related  # joined by the authentication's query (wiring.py)
    if loaded.is_cached(license):
        row = loaded.get_cached_value(license)
        return 0 if row is None else row.value  # None: no ticket of the license was ever written
    # A caller served from its process's copy (accounts.api.callers) comes without it: one indexed read, raw
    # (the ORM's compile of it cost more than the statement).
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT {GENERATION_SQL}", [license.pk])
        return cursor.fetchone()[0]


def _counted(sql: str, params, license_id: int | None = None) -> tuple:
    """The count of the set (and, with `license_id`, the license's generation first, from the same snapshot)."""
    # On a replica (inside a designated read) the generation comes from the same snapshot as the count, so the
    # entry is stored under the generation it is exact at, as on the primary.
    alias = read_alias()
    inside = connections[alias].in_atomic_block
    # (no savepoint inside a longer transaction: it would only cost a statement)
    with transaction.atomic(using=alias, savepoint=False), connections[alias].cursor() as cursor:
        _raise_work_mem(cursor)
        if license_id is None:
            cursor.execute(f"SELECT COUNT(*) FROM ({sql}) s", params)
        else:
            cursor.execute(
                f"SELECT {GENERATION_SQL}, (SELECT COUNT(*) FROM ({sql}) s)", [license_id, *params]
            )
        row = cursor.fetchone()
        if inside:
            _restore_work_mem(cursor)
    return row[0] if license_id is None else row


def _count(license_id: int, digest: str, sql: str, params) -> int:
    started = time.perf_counter()
    current, count = _counted(sql, params, license_id)
    cache.set_many(
        {count_key(license_id, current, digest): count, latest_key(license_id, digest): (current, count)},
        COUNT_TTL_SECONDS,
    )
    took = (time.perf_counter() - started) * 1000
    if took >= settings.TICKET_COUNT_CARRY_MIN_MS:
        registry.register(license_id, digest, sql, params, took)
    return count


def _raise_work_mem(cursor) -> None:
    """`TICKET_COUNT_WORK_MEM` and no JIT for the count's statement only (PostgreSQL; `SET LOCAL`, in its
    transaction).

    A common word's matches (`query=payment`, 59,000 of the largest license's 300,000 tickets) do not fit the
    default 4 MB of a bitmap: it goes lossy, and every row of every page it names is read and re-checked. At
    64 MB the cold count reads 67k instead of 176k buffers. Its cost is reading the heap, which JIT does not
    speed up: JIT only added 55-170 ms of compilation to it (bench/README.md, issue 34)."""
    if cursor.db.vendor == "postgresql" and settings.TICKET_COUNT_WORK_MEM:
        cursor.execute(
            "SELECT set_config('work_mem', %s, true), set_config('jit', 'off', true)",
            [settings.TICKET_COUNT_WORK_MEM],
        )


def _restore_work_mem(cursor) -> None:
    """Inside a longer transaction (`SET LOCAL` would last to its end), the session's values again."""
    if cursor.db.vendor == "postgresql" and settings.TICKET_COUNT_WORK_MEM:
        cursor.execute("SET LOCAL work_mem TO DEFAULT; SET LOCAL jit TO DEFAULT")


def _wait_for_count(license_id: int, digest: str, wanted: int, counting: str) -> int | None:
    """Another request is counting this set: its count, once stored, if it is at `wanted` or later (a later
    one is as good an answer: a write committed during this request). None when it gave up or went away."""
    deadline = time.monotonic() + COUNT_WAIT_SECONDS
    pause = 0.005
    while True:
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
        latest = cache.get(latest_key(license_id, digest))
        if latest is not None and _answers(latest[0], wanted):
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
    latest = cache.get(latest_key(license_id, digest))
    if latest is None:
        return None
    generation, count = latest
    awaited = False
    for _ in range(MAX_STEPS):
        if generation >= wanted:
            break
        step = cache.get(step_key(license_id, generation, digest))
        if step is None and not awaited:
            awaited = True
            step = _await_step(license_id, digest, generation, wanted)
        if step is None:
            return None
        generation, count = step[0], count + step[1]
    if not _answers(generation, wanted):
        return None
    # (beyond `wanted`: a write committed during this request; its newer total is as good an answer)
    cache.set_many(
        {
            count_key(license_id, generation, digest): count,
            latest_key(license_id, digest): (generation, count),
        },
        COUNT_TTL_SECONDS,
    )
    return count


def _answers(generation: int, wanted: int) -> bool:
    """Whether a count at `generation` answers a search that wants `wanted`: on the primary a later one does too
    (a write committed during the request); on a replica only the same, the snapshot its page comes from."""
    return generation == wanted or (generation > wanted and read_alias() == "default")


def _await_step(license_id: int, digest: str, generation: int, wanted: int):
    """The step from `generation`, if a write that just committed is about to store it; else None.

    A write stores its steps right after its commit, so a reader that authenticated in between sees the new
    generation a millisecond or two before the step. For a set slower to count than the wait (a registered one:
    only those get steps), when the wanted generation was raised within the last STEP_WAIT_RECENT_MS, the
    reader waits up to STEP_WAIT_MS for it instead of counting. Generations are raised to the time in
    microseconds, which is how "recent" is told; a skewed clock only means a wait too many or too few."""
    if time.time_ns() // 1000 - wanted > STEP_WAIT_RECENT_MS * 1000:
        return None
    entry = registry.registered(license_id).get(digest)
    if entry is None or entry[2] < 2 * STEP_WAIT_MS:
        return None
    deadline = time.monotonic() + STEP_WAIT_MS / 1000
    while time.monotonic() < deadline:
        time.sleep(0.002)
        step = cache.get(step_key(license_id, generation, digest))
        if step is not None:
            return step
    return None
