"""Rate limits per token and per license: fixed-window counters in the cache, reported in X-RateLimit-* headers.

Every authenticated API request counts once in two buckets: its token's (a personal access token, or an OAuth
access token: keyed by the class and primary key of `request.auth`, so both kinds work) and its license's
(shared by every token acting in it). A bucket is a counter per window (`RATE_LIMIT_WINDOW_SECONDS`), its key
naming the window, so it resets at the window's end without a read of its TTL. Past either limit: 429 with
Retry-After (until the window ends). The headers report the tighter of the two buckets.

On Redis both counters are incremented (and given an expiry) in one round trip: one EVAL of a short script. When Redis is away
the limits fail open: the request passes, only X-RateLimit-Limit is sent, and a warning is logged on
`helpdesk.cache` (at most once per 30 seconds, as django-redis's ignored errors are). On any other cache (the embedded default's file-based cache) a counter is read and written
back, not atomically: under concurrency a few requests may slip past a limit, which is enough for one machine.

Anonymous requests are not counted here: failed authentications have their own throttle (accounts/api/authentication.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django_redis.cache import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

log = logging.getLogger("helpdesk.cache")

# The attribute of the Django request (not DRF's wrapper, which middleware never sees) holding the outcome.
STATE_ATTRIBUTE = "rate_limit"


@dataclass(frozen=True, slots=True)
class RateLimit:
    limit: int
    remaining: int | None  # None: the counters could not be read (the cache is away): the limit is open
    reset: int | None  # epoch seconds at which the window ends
    exceeded: bool = False

    def headers(self) -> dict[str, str]:
        headers = {"X-RateLimit-Limit": str(self.limit)}
        if self.remaining is not None:
            headers["X-RateLimit-Remaining"] = str(self.remaining)
            headers["X-RateLimit-Reset"] = str(self.reset)
        return headers


def rate_limit_key(request) -> str:
    """The token's bucket: the same for a PAT and an OAuth access token (whatever `request.auth` is)."""
    return f"{type(request.auth).__name__}:{request.auth.pk}"


def _buckets(request) -> list[tuple[str, int]]:
    license = getattr(request, "license", None)
    return buckets_of(rate_limit_key(request), license.pk if license is not None else None)


def buckets_of(token_key: str, license_id: int | None) -> list[tuple[str, int]]:
    """The `(key, limit)` buckets a request of this token (`rate_limit_key`) in this license counts in."""
    buckets = []
    if settings.RATE_LIMIT_PER_TOKEN > 0:
        buckets.append((f"ratelimit:token:{token_key}", settings.RATE_LIMIT_PER_TOKEN))
    if settings.RATE_LIMIT_PER_LICENSE > 0 and license_id is not None:
        buckets.append((f"ratelimit:license:{license_id}", settings.RATE_LIMIT_PER_LICENSE))
    return buckets


# INCR and EXPIRE of every bucket in one command. It was a pipeline of the four commands (one round trip too):
# redis-py's pipeline object, four commands packed and four replies read: 44 us of CPU per count against 27 us
# for one EVAL (`_count_redis` alone, 2,000 calls, best of 5); per search request 13.08 M -> 12.91 M
# instructions (bench/cpu.py --instructions, inbox, 100k-ticket data set; bench/README.md, issue 34).
# EVAL, not EVALSHA: a Redis that lost its script cache (restart, SCRIPT FLUSH) answers it as well.
_COUNT_SCRIPT = """
local counts = {}
for i, key in ipairs(KEYS) do
  counts[i] = redis.call('INCR', key)
  redis.call('EXPIRE', key, ARGV[1])
end
return counts
"""


def _count_redis(cache, keys: list[str], ttl: int) -> list[int]:
    keys = [cache.make_key(key) for key in keys]
    return cache.client.get_client(write=True).eval(_COUNT_SCRIPT, len(keys), *keys, ttl)


def _count_generic(cache, keys: list[str], ttl: int) -> list[int]:
    # Not atomic (nor is `incr` on these backends); `set` with the window's TTL, as `incr` would give the
    # counter the default timeout and leave stale windows behind in the file cache, crowding out its culling.
    counts = cache.get_many(keys)
    counts = {key: counts.get(key, 0) + 1 for key in keys}
    cache.set_many(counts, ttl)
    return list(counts.values())


def _count(keys: list[str], ttl: int) -> list[int] | None:
    """The counters after this request's increment, or None when the cache cannot be reached."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        try:
            return _count_redis(cache, keys, ttl)
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            log.warning("Cache unavailable (rate limit: %s): the throttles fail open", exc)
            return None
    return _count_generic(cache, keys, ttl)


# The same INCR + EXPIRE of the buckets (KEYS[1..ARGV[2]]), and in the same round trip the current value of each
# further key (a version, accounts.api.callers), set to its ARGV (a fresh random value, with ARGV[3]'s expiry)
# when it has none: an authenticated request's one Redis command.
_COUNT_AND_READ_SCRIPT = """
local counted = tonumber(ARGV[2])
local out = {}
for i = 1, counted do
  out[i] = redis.call('INCR', KEYS[i])
  redis.call('EXPIRE', KEYS[i], ARGV[1])
end
for i = counted + 1, #KEYS do
  local value = redis.call('GET', KEYS[i])
  if not value then
    value = ARGV[i - counted + 3]
    redis.call('SET', KEYS[i], value, 'EX', ARGV[3])
  end
  out[i] = value
end
return out
"""

NOT_COUNTED = object()  # count_and_read's state when the count is left to the throttle


def count_and_read(
    buckets: list[tuple[str, int]], keys: list[str], fresh: list[str], ttl: int
) -> tuple[object, list[str] | None]:
    """`count_window(buckets)` and the values of the cache keys `keys` in one Redis round trip, a missing key
    first set to its `fresh` value (expiring after `ttl` seconds): (the window's RateLimit or None, the values).

    On Redis away: (a RateLimit with the limit open, None). On any other cache the keys are read here (a missing
    one added) and the count is left to the throttle: (NOT_COUNTED, the values)."""
    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        values = []
        for key, value in zip(keys, fresh, strict=True):
            found = cache.get(key)
            if found is None:
                cache.add(key, value, ttl)
                found = cache.get(key)
            values.append(found)
        return NOT_COUNTED, None if None in values else values
    window = settings.RATE_LIMIT_WINDOW_SECONDS
    if window <= 0:
        buckets = []
    now = time.time()
    number = int(now // window) if buckets else 0
    reset = (number + 1) * window if buckets else int(now) + 1
    counted = [cache.make_key(f"{key}:{number}") for key, _ in buckets]
    try:
        out = cache.client.get_client(write=True).eval(
            _COUNT_AND_READ_SCRIPT,
            len(counted) + len(keys),
            *counted,
            *(cache.make_key(key) for key in keys),
            int(reset - now) + 1,
            len(counted),
            ttl,
            *fresh,
        )
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        log.warning("Cache unavailable (rate limit and caller: %s): the throttles fail open", exc)
        state = (
            RateLimit(limit=min(limit for _, limit in buckets), remaining=None, reset=None)
            if buckets
            else None
        )
        return state, None
    values = [value.decode() if isinstance(value, bytes) else value for value in out[len(counted) :]]
    return (_outcome(buckets, out[: len(counted)], reset) if buckets else None), values


def keep(request, state) -> None:
    """`state` (from `count_and_read`) is this request's count: the throttle does not count it again."""
    if state is not NOT_COUNTED:
        setattr(getattr(request, "_request", request), STATE_ATTRIBUTE, state)


def check(request) -> RateLimit | None:
    """Count an authenticated request in its buckets; the outcome is kept on the request for the headers.

    None when no limit applies (anonymous, or every limit set to 0). Counted once per request.
    """
    django_request = getattr(request, "_request", request)
    state = getattr(django_request, STATE_ATTRIBUTE, None)
    if state is not None or getattr(request, "_auth", None) is None:
        return state
    state = count_window(_buckets(request))
    setattr(django_request, STATE_ATTRIBUTE, state)
    return state


def count_window(buckets: list[tuple[str, int]]) -> RateLimit | None:
    """Count one hit in each `(key, limit)` bucket of the current window (RATE_LIMIT_WINDOW_SECONDS): the
    outcome of the tightest. None when no limit applies (no buckets, or the window set to 0). Used by the
    API's requests (above) and by the public contact forms (per IP and per form)."""
    window = settings.RATE_LIMIT_WINDOW_SECONDS
    if window <= 0 or not buckets:
        return None
    now = time.time()
    number = int(now // window)
    reset = (number + 1) * window
    counts = _count([f"{key}:{number}" for key, _ in buckets], int(reset - now) + 1)
    if counts is None:
        return RateLimit(limit=min(limit for _, limit in buckets), remaining=None, reset=None)
    return _outcome(buckets, counts, reset)


def _outcome(buckets: list[tuple[str, int]], counts: list[int], reset: int) -> RateLimit:
    # The tighter bucket: the fewest requests left (then the smaller limit).
    pairs = [(limit, count) for (_, limit), count in zip(buckets, counts, strict=True)]
    remaining, limit = min((max(limit - count, 0), limit) for limit, count in pairs)
    exceeded = any(count > limit for limit, count in pairs)
    return RateLimit(limit=limit, remaining=remaining, reset=reset, exceeded=exceeded)


def retry_after(state: RateLimit) -> int:
    return max(1, state.reset - int(time.time()))


class RateLimitThrottle(BaseThrottle):
    """DRF's throttle hook (runs after authentication and the permission checks); past the limit DRF raises
    `Throttled(wait)`, which the error handler answers as a 429 with Retry-After."""

    state = None

    def allow_request(self, request, view):
        self.state = check(request)
        return self.state is None or not self.state.exceeded

    def wait(self):
        return retry_after(self.state)


def for_error(exc, request):
    """The exception the error handler answers, with rate limits applied.

    An error raised before the throttle ran (a permission check's 403) still counts, and past the limit the
    answer is the 429; DRF's own `Throttled` for this limit gains its code and message.
    """
    if request is None:
        return exc
    state = check(request)
    if state is not None and state.exceeded:
        return Throttled(wait=retry_after(state), detail="Rate limit exceeded.", code="rate_limit_exceeded")
    return exc


class RateLimitHeadersMiddleware:
    """Puts the X-RateLimit-* headers of a counted request on its response, whatever the status."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        state = getattr(request, STATE_ATTRIBUTE, None)
        if state is not None:
            for header, value in state.headers().items():
                response[header] = value
        return response
