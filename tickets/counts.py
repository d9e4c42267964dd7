"""Exact totals for ticket search, cached per license and filter set.

Counting a large license is the most expensive part of a search page. A count is cached under a key made of
the license, the license's *generation* and the compiled SQL of the filtered query (so relative dates are
already resolved). Every ticket write bumps the generation (at once, and again when the transaction commits,
so that a count computed from not-yet-committed data can never outlive the commit): totals stay exact.
"""

from __future__ import annotations

import hashlib
import time

from django.core.cache import cache
from django.db import transaction

COUNT_TTL_SECONDS = 300
GENERATION_TTL_SECONDS = 7 * 24 * 3600


def _generation_key(license_id: int) -> str:
    return f"tickets:gen:{license_id}"


def generation(license_id: int) -> int:
    value = cache.get(_generation_key(license_id))
    if value is None:
        # A fresh start from the clock: never equal to a generation used before an eviction.
        cache.add(_generation_key(license_id), time.time_ns(), GENERATION_TTL_SECONDS)
        value = cache.get(_generation_key(license_id), 0)
    return value


def _bump(license_id: int) -> None:
    key = _generation_key(license_id)
    try:
        cache.incr(key)
    except ValueError:
        cache.set(key, time.time_ns(), GENERATION_TTL_SECONDS)


def invalidate(license_id: int) -> None:
    """Call from every write to a license's tickets (inside its transaction)."""
    _bump(license_id)
    transaction.on_commit(lambda: _bump(license_id))


def cached_count(queryset, license_id: int) -> int:
    """The exact count of `queryset`, from the cache when nothing of the license changed since it was counted.

    One cache round trip: the entry holds the generation it was counted at and is read together with the
    license's current generation.
    """
    # The key is the filtered query's SQL; compiled as `SELECT id` it costs a third of the full column list.
    sql, params = queryset.values("pk").query.sql_with_params()
    digest = hashlib.sha1(f"{sql}|{params!r}".encode(), usedforsecurity=False).hexdigest()
    key, generation_key = f"tickets:count:{license_id}:{digest}", _generation_key(license_id)
    found = cache.get_many([key, generation_key])
    current = found.get(generation_key)
    if current is None:
        current = generation(license_id)
    entry = found.get(key)
    if entry is not None and entry[0] == current:
        return entry[1]
    count = queryset.order_by().count()
    cache.set(key, (current, count), COUNT_TTL_SECONDS)
    return count
