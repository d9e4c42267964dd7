"""Beat's scheduler with REDIS_URL set: RedBeat, kept alive through a Redis outage.

RedBeat's `tick()` extends its lock and reads the schedule from Redis; a connection error there ends
`celery beat` (exit 1), and nothing would run the sweepers again. Here a tick that cannot reach Redis logs a
warning and tries again after RETRY_SECONDS; a lock that expired while Redis was away is taken again when it
is free (another beat may have taken it meanwhile: then this one waits, firing nothing). Beat ticks at least
every CELERY_BEAT_MAX_LOOP_INTERVAL seconds and the lock lives CELERY_REDBEAT_LOCK_TIMEOUT seconds, so a beat
started after one that died takes over within that long.
"""

from __future__ import annotations

import logging

from redbeat.schedulers import LUA_EXTEND_TO_SCRIPT, RedBeatScheduler, get_redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import LockError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

RETRY_SECONDS = 2.0


class Scheduler(RedBeatScheduler):
    def _hold_lock(self) -> bool:
        """Whether this beat holds the lock now (extending it, or taking it when free)."""
        if self.lock is not None:
            try:
                self.lock.extend(int(self.lock_timeout))
                return True
            except LockError:  # expired while Redis was away
                pass
        client = get_redis(self.app)
        lock = client.lock(self.lock_key, timeout=self.lock_timeout, sleep=self.max_interval)
        lock.lua_extend = client.register_script(LUA_EXTEND_TO_SCRIPT)  # as RedBeat does: extend *to*
        if not lock.acquire(blocking=False):
            self.lock = None
            return False
        log.info("beat: Acquired lock")
        self.lock = lock
        return True

    def tick(self, *args, **kwargs):
        try:
            if self.lock_key and not self._hold_lock():
                log.debug("beat: another beat holds the lock; waiting")
                return self.max_interval
            return super().tick(*args, **kwargs)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            log.warning("beat: Redis is unreachable (%s); trying again in %s s", exc, RETRY_SECONDS)
            return RETRY_SECONDS
