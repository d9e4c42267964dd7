"""The Redis cache backend: Django's, keeping one `redis.Redis` per connection pool, and never failing a request.

Django's `RedisCacheClient.get_client()` builds a new `redis.Redis` for every cache operation, and redis-py
fills its response-callback table in the constructor: ~90 µs, a third of a cached search total's round trip.
The client holds no state of its own beyond its pool, so one per pool will do (Django keeps a cache backend,
and so its pools, per thread).

Redis holds only what can be recomputed (totals, throttle counters, locks), so when it is unreachable every
operation degrades instead of raising: a read is a miss, a write is a no-op, `add` does not add (a lock is not
taken), `incr` behaves as for a missing key (`ValueError`, which callers already handle). Throttles therefore
fail open. A warning is logged at most once per WARN_INTERVAL_SECONDS per process; the settings give the
client a short socket timeout (CACHE_SOCKET_TIMEOUT) so an unreachable Redis costs a request little.
"""

import functools
import logging
import time

from django.core.cache.backends import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, OSError)
WARN_INTERVAL_SECONDS = 30.0
_last_warning = 0.0


def _warn(operation: str, exc: Exception) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= WARN_INTERVAL_SECONDS:
        _last_warning = now
        log.warning(
            "Cache unavailable (%s: %s): reads are misses, writes are skipped, throttles fail open",
            operation,
            exc,
        )


def _degrade(fallback):
    """Run the operation; on a connection error log (rate-limited) and return `fallback(*args)` instead."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except UNAVAILABLE as exc:
                _warn(method.__name__, exc)
                return fallback(*args, **kwargs)

        return wrapper

    return decorate


def _missing_key(*args, **kwargs):
    raise ValueError("Key not found (cache unavailable)")


class RedisCacheClient(redis.RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(redis.RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = RedisCacheClient

    # Reads: a miss.
    get = _degrade(lambda key, default=None, version=None: default)(redis.RedisCache.get)
    get_many = _degrade(lambda *args, **kwargs: {})(redis.RedisCache.get_many)
    has_key = _degrade(lambda *args, **kwargs: False)(redis.RedisCache.has_key)
    # Writes: nothing stored, nothing taken.
    add = _degrade(lambda *args, **kwargs: False)(redis.RedisCache.add)
    set = _degrade(lambda *args, **kwargs: None)(redis.RedisCache.set)
    set_many = _degrade(lambda data, *args, **kwargs: list(data))(redis.RedisCache.set_many)
    touch = _degrade(lambda *args, **kwargs: False)(redis.RedisCache.touch)
    delete = _degrade(lambda *args, **kwargs: False)(redis.RedisCache.delete)
    delete_many = _degrade(lambda *args, **kwargs: None)(redis.RedisCache.delete_many)
    clear = _degrade(lambda *args, **kwargs: False)(redis.RedisCache.clear)
    incr = _degrade(_missing_key)(redis.RedisCache.incr)
