"""Read replicas: searches, view counts, reports and the admin's lists read from a streaming replica when one is
fresh enough for the caller; everything else, and every write, uses the primary (`default`).

Configured by DATABASE_REPLICA_URLS (settings: aliases `replica_0`, `replica_1`, ...). Without it every function
here answers `default` at once and costs nothing.

Read your own writes. After a request that may have written (any method but GET, HEAD, OPTIONS), the middleware
records the primary's WAL insert position (`pg_current_wal_insert_lsn()`, which is past the request's commit) in
the cache under the caller (the signed-in account: the same key for its API tokens, OAuth tokens and admin
session). A designated read (`read_from_replica`) then uses a replica only if its replay position
(`pg_last_wal_replay_lsn()`) has reached the larger of the caller's LSN and the *floor*: the primary's position
when the cache's records began (the first read that finds no floor sets it). A cache that was flushed or
restarted has lost the callers' records, but its new floor is past all of them; a cache that is unreachable gives
no floor, and then every read goes to the primary. So a caller never reads a replica older than its last write,
whatever happened to Redis.

Each process remembers the last replay position it saw per replica: positions only grow, so a remembered one that
is already far enough needs no query; otherwise one `SELECT pg_last_wal_replay_lsn()` on the replica refreshes it.
A replica that cannot be reached, or fails during the read, is left alone for REPLICA_RETRY_SECONDS and the read
is done again on the primary: a lagging or down replica costs the caller time, never an error.

Bounded staleness. A caller who wrote nothing recently may read a replica that is behind, but not by much: every
DATABASE_REPLICA_MAX_LAG_SECONDS (30) the floor moves up to where the primary was one period before, so a replica
stuck or lagging by more than one to two periods is not used at all (its callers read the primary).

Routing itself is the database router below: inside a designated read the ORM's reads go to the chosen alias, and
the raw SQL of the search (tickets.output, tickets.totals) asks `read_alias()` for its cursor.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import random
import time

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.template.response import SimpleTemplateResponse
from rest_framework.response import Response

log = logging.getLogger("helpdesk.replicas")

PRIMARY = "default"
FLOOR_KEY = "replicas:floor"  # (floor, candidate, when the candidate was read): see _required_position
FLOOR_LOCK_KEY = "replicas:floor-renewal"
CALLER_KEY = "replicas:lsn:{}"
LSN_TTL_SECONDS = (
    7 * 24 * 3600
)  # past this a caller's record may go: a replica a week behind is not "lagging"
REPLICA_RETRY_SECONDS = 10
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_reading: contextvars.ContextVar[str | None] = contextvars.ContextVar("helpdesk_read_alias", default=None)
_replayed: dict[str, int] = {}  # alias -> the last replay position seen (only grows)
_down_until: dict[str, float] = {}  # alias -> monotonic time before which it is not tried


def replica_aliases() -> list[str]:
    return list(getattr(settings, "DATABASE_REPLICAS", ()))


def lsn_value(text: str | None) -> int | None:
    """'16/B374D848' → an integer that orders as the positions do."""
    if not text:
        return None
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def read_alias() -> str:
    """The alias the current designated read uses (`default` outside one)."""
    return _reading.get() or PRIMARY


def _caller_key(user) -> str | None:
    pk = getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None
    return CALLER_KEY.format(pk) if pk is not None else None


def _primary_position() -> int:
    with connections[PRIMARY].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        return lsn_value(cursor.fetchone()[0])


def record_write(user) -> None:
    """After a request that may have written: remember where the primary's WAL was, for this caller."""
    key = _caller_key(user)
    if key is None or not replica_aliases():
        return
    try:
        cache.set(key, _primary_position(), LSN_TTL_SECONDS)
    except DatabaseError:  # the primary went away after the write: the caller's next read finds no replica
        log.warning("could not read the primary's WAL position after a write", exc_info=True)


def _max_lag() -> float:
    return float(getattr(settings, "DATABASE_REPLICA_MAX_LAG_SECONDS", 30))


def _required_position(user) -> int | None:
    """The replay position a replica must have reached for this caller, or None: read the primary."""
    key = _caller_key(user)
    keys = [FLOOR_KEY] + ([key] if key else [])
    found = cache.get_many(keys)
    if FLOOR_KEY not in found:
        # The cache's records start now (first use, a flush, a restart) or the cache is unreachable: a new floor
        # past every write made so far. `add`: of two processes starting it, the first wins.
        position = _primary_position()
        cache.add(FLOOR_KEY, (position, position, time.time()), None)
        found = cache.get_many(keys)
        if FLOOR_KEY not in found:  # unreachable: nothing tells what the caller wrote
            return None
    floor, candidate, candidate_at = found.pop(FLOOR_KEY)
    if time.time() - candidate_at >= _max_lag() and cache.add(FLOOR_LOCK_KEY, 1, max(int(_max_lag()), 1)):
        # Bounded staleness for everyone: the candidate, the primary's position at least DATABASE_REPLICA_MAX_LAG
        # seconds ago, becomes the floor, and the primary's position now the next candidate. A replica that has
        # not replayed what the primary had one to two such periods ago is not used (one primary read per period
        # for the whole deployment: the lock lets one process renew it).
        floor = candidate
        cache.set(FLOOR_KEY, (floor, _primary_position(), time.time()), None)
    return max([floor, *found.values()])


def _replay_position(alias: str) -> int | None:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT pg_last_wal_replay_lsn()::text")
        return lsn_value(cursor.fetchone()[0])  # None: not a standby (promoted): not used as a replica


def choose(user) -> str:
    """A replica whose replay has reached what this caller must see, else the primary."""
    aliases = replica_aliases()
    if not aliases:
        return PRIMARY
    now = time.monotonic()
    aliases = [alias for alias in aliases if _down_until.get(alias, 0) <= now]
    if not aliases:
        return PRIMARY
    required = _required_position(user)
    if required is None:
        return PRIMARY
    random.shuffle(aliases)  # spread the reads over the replicas
    for alias in aliases:
        if _replayed.get(alias, -1) >= required:
            return alias
    for alias in aliases:
        try:
            position = _replay_position(alias)
        except DatabaseError:
            _mark_down(alias)
            continue
        if position is not None:
            _replayed[alias] = max(position, _replayed.get(alias, -1))
            if position >= required:
                return alias
    return PRIMARY


def _mark_down(alias: str) -> None:
    log.warning("replica %s is unreachable: reads go to the primary for %s s", alias, REPLICA_RETRY_SECONDS)
    _down_until[alias] = time.monotonic() + REPLICA_RETRY_SECONDS
    _replayed.pop(alias, None)
    with contextlib.suppress(DatabaseError):
        connections[alias].close()


def reading(user, read):
    """`read()` with its reads on a replica fresh enough for `user`; on the primary if none is, or if the
    replica fails during it (unreachable, or a query cancelled by a conflict with recovery)."""
    alias = choose(user)
    if alias == PRIMARY:
        return read()
    token = _reading.set(alias)
    try:
        result = read()
        if isinstance(result, SimpleTemplateResponse) and not isinstance(result, Response):
            result.render()  # an admin page evaluates its querysets while it renders: on this alias too
        return result
    except (OperationalError, InterfaceError):
        if not connections[alias].is_usable():
            _mark_down(alias)
        log.warning("a read on replica %s failed: done again on the primary", alias, exc_info=True)
    finally:
        _reading.reset(token)
    return read()


def read_from_replica(view):
    """Decorate a view method (`self, request, ...`) or a view function (`request, ...`) whose reads may come
    from a replica."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        request = args[1] if len(args) > 1 and hasattr(args[1], "method") else args[0]
        return reading(getattr(request, "user", None), lambda: view(*args, **kwargs))

    return wrapper


class ReplicaRouter:
    """Reads inside a designated read go to its alias; every write, and every migration, to the primary."""

    def db_for_read(self, model, **hints):
        return _reading.get()

    def db_for_write(self, model, **hints):
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True

    def allow_migrate(self, db, app_label, **hints):
        return db == PRIMARY


class ReplicaMiddleware:
    """Records the caller's WAL position after each request that may have written (only with replicas)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.enabled = bool(replica_aliases())

    def __call__(self, request):
        response = self.get_response(request)
        if self.enabled and request.method not in SAFE_METHODS and response.status_code < 500:
            record_write(getattr(request, "user", None))
        return response
