"""Exact totals for ticket search, cached per license and filter set.

Counting a large license is the most expensive part of a search page. A count is cached under a key made of
the license, the license's *generation* and the compiled SQL of the filtered query (so relative dates are
already resolved).

The generation lives in PostgreSQL, not in the cache: `License.tickets_generation`, raised by every ticket
write inside the write's own transaction (`invalidate`). Why this is never stale, whatever happens to Redis:
- the new generation becomes visible in the same commit as the data it describes, never before or after;
- a request reads the generation (authentication loads the license row, so the read is free) before it
  counts, so an entry stored under generation G counts at least every write committed with a generation ≤ G;
- generations only grow (a row lock orders the writers), so a write after G moves every reader off G's entries.
Redis is only ever asked to remember a count for a generation; if it is unreachable the count is computed
(the cache backend turns errors into misses) and nothing that matters is lost, since no invalidation is kept
there. The earlier design kept the generation in Redis, and an increment lost during an outage served a
stale total once Redis came back.

The cost: one `UPDATE` of the license row per ticket write (~0.2 ms, measured), holding that row's lock
until the commit; searches pay nothing (one cache key read instead of two). Writes to one license already
queue at their end on the audit chain head (audit/chain.py), so the lock adds little serialization. Lock
order: ticket rows, then the license row. A path that locks the license first and then tickets (team or agent
deletion) can deadlock with a concurrent ticket write; PostgreSQL aborts one of the two, which answers a
retryable 503 (helpdesk/api/errors.py), nothing half-written. The new value is at least the current time in microseconds, so a generation
is not reused after a database restore rewinds the column; still flush the cache (or change
CACHE_KEY_PREFIX) after a restore: an entry of the rewound generation may count writes the restore undid.
"""

from __future__ import annotations

import hashlib
import time

from django.core.cache import cache
from django.db.models import F, Value
from django.db.models.functions import Greatest

from accounts.models import License

COUNT_TTL_SECONDS = 300


def generation(license_id: int) -> int:
    return License.objects.values_list("tickets_generation", flat=True).get(pk=license_id)


def invalidate(license_id: int) -> None:
    """Call from every write to a license's tickets, inside its transaction."""
    License.objects.filter(pk=license_id).update(
        tickets_generation=Greatest(F("tickets_generation") + 1, Value(time.time_ns() // 1000))
    )


def cached_count(queryset, license) -> int:
    """The exact count of `queryset`, from the cache when nothing of the license changed since it was counted.

    `license` is the caller's License row as loaded for this request (its generation read before the count).
    One cache round trip; an unreachable cache is a miss.
    """
    current = license.tickets_generation
    # The key is the filtered query's SQL; compiled as `SELECT id` it costs a third of the full column list.
    sql, params = queryset.values("pk").query.sql_with_params()
    digest = hashlib.sha1(f"{sql}|{params!r}".encode(), usedforsecurity=False).hexdigest()
    key = f"tickets:count:{license.pk}:{current}:{digest}"
    found = cache.get(key)
    if found is not None:
        return found
    count = queryset.order_by().count()
    cache.set(key, count, COUNT_TTL_SECONDS)
    return count
