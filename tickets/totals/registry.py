"""Each license's registry of expensive filter sets (in the cache), whose totals writes carry over, and the
re-test of a write's tickets against them."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from tickets.models import Ticket
from tickets.totals.keys import GENERATION_SQL, registry_key, seen_key

REGISTRY_TTL_SECONDS = 3600
SEEN_SECONDS = 3600  # a set's second expensive count within this time registers it
ADMIT_AT_ONCE_FACTOR = 20  # a count this many times TICKET_COUNT_CARRY_MIN_MS registers its set at once
IDLE_SECONDS = 600  # a registered set not used for this long is the first to go
MARK_EVERY_SECONDS = 60


def registered(license_id: int) -> dict:
    """digest -> (sql, params, count ms, last used) of the license's registered sets."""
    return cache.get(registry_key(license_id)) or {}


def register(license_id: int, digest: str, sql: str, params, took_ms: float) -> None:
    """Remember an expensive filter set so that writes carry its total over.

    Admission: a set counted once and never again (a rare word) must not push out the sets a license searches
    all day, so a set is admitted on its second expensive count within the hour, or at once when its count took
    ADMIT_AT_ONCE_FACTOR times the threshold. Eviction: the sets idle for over IDLE_SECONDS go first, then the
    others, the cheapest first within each (`keep_registered` marks a set used when its total is found cached
    under the request's generation)."""
    at_once = took_ms >= settings.TICKET_COUNT_CARRY_MIN_MS * ADMIT_AT_ONCE_FACTOR
    if not at_once and cache.add(seen_key(license_id, digest), 1, SEEN_SECONDS) is not False:
        return  # first sighting (or the cache is away)
    now = time.time()
    sets = registered(license_id)
    sets[digest] = (sql, tuple(params), took_ms, now)
    if len(sets) > settings.TICKET_COUNT_CARRY_SETS:
        # the sets idle for over IDLE_SECONDS first, then the others; within each, the cheapest first
        ranked = sorted(sets, key=lambda d: (now - sets[d][3] < IDLE_SECONDS, sets[d][2], sets[d][3]))
        for evicted in ranked[: len(sets) - settings.TICKET_COUNT_CARRY_SETS]:
            del sets[evicted]
    cache.set(registry_key(license_id), sets, REGISTRY_TTL_SECONDS)
    marked[(license_id, digest)] = time.monotonic()


marked: dict = {}  # (license ID, digest) -> when this process last marked the set used in the registry


def keep_registered(license_id: int, digest: str) -> None:
    """A cached total was served: at most once a minute per process, mark its set (if registered) used; no cache
    round trip the first time a process serves it."""
    if len(marked) > 10_000:
        marked.clear()
    now = time.monotonic()
    last = marked.setdefault((license_id, digest), now)  # first seen: marked after a minute of use
    if now - last < MARK_EVERY_SECONDS:
        return
    marked[(license_id, digest)] = now
    sets = cache.get(registry_key(license_id))
    if sets and digest in sets:
        sql, params, took_ms, _ = sets[digest]
        sets[digest] = (sql, params, took_ms, time.time())
        cache.set(registry_key(license_id), sets, REGISTRY_TTL_SECONDS)


def retest(sets: dict, ticket_ids, license_id: int | None = None) -> list[int]:
    """In one statement: for each filter set, how many of its rows belong to `ticket_ids`; with `license_id`,
    the license's generation first (same snapshot)."""
    prepared = [Ticket._meta.pk.get_db_prep_value(i, connection) for i in ticket_ids]
    marks = ", ".join(["%s"] * len(prepared))
    columns, params = [], []
    if license_id is not None:
        columns.append(GENERATION_SQL)
        params.append(license_id)
    for sql, set_params, *_ in sets.values():
        columns.append(f"(SELECT COUNT(*) FROM ({sql}) s WHERE s.counted_ticket IN ({marks}))")
        params += [*set_params, *prepared]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)}", params)
        return list(cursor.fetchone())
