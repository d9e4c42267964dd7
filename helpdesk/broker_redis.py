"""The task queue on Redis: kombu's Redis transport, with one Redis client per channel instead of one per command.

kombu (5.7) builds a new `redis.Redis` around the channel's connection pool for every command it sends outside
its poller (`Channel.conn_or_acquire`), a publish's LPUSH included; redis-py's constructor fills a table of
~170 response callbacks each time. That was ~0.5 M of the ~2.75 M interpreter instructions of one task publish
(bench/README.md, "Issue 34: fifth round"), paid by every write that sends a mail. A `redis.Redis` is
thread-safe (each command takes a connection from the pool), so the channel keeps the one it made, and makes
another when kombu replaces the pool (after a connection error, `_disconnect_pools`).
"""

from __future__ import annotations

from contextlib import contextmanager

from kombu.transport import redis


class Channel(redis.Channel):
    _kept_client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        pool = self.pool
        kept = self._kept_client
        if kept is None or kept.connection_pool is not pool:
            kept = self._kept_client = self._create_client()
        yield kept


class Transport(redis.Transport):
    Channel = Channel
