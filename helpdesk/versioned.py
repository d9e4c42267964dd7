"""Per-process copies of what a license reads on every write (its rules, its SLA policies), kept under a version.

Each process keeps a copy per license with the version it was read at: a token in the cache (Redis), dropped by
every change (`changed`: now and again after its commit, so that no process keeps what it read before the commit
under the new token) and drawn anew by the next reader BEFORE it reads the rows. A write then costs one cache read
instead of a query. Redis away: no token, the rows are read every time (correct, slower). `seconds` bounds how long
a process trusts its copy should a drop have been lost; `most` bounds the memory (licenses held per process).
Measured for the rules (bench/rules_cost.py): reading and decoding them on every write cost ~40 us of CPU per rule.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from django.core.cache import cache
from django.db import transaction


class VersionedCopies:
    def __init__(self, name: str, *, seconds: float = 300, most: int = 1000):
        self.key = f"{name}:version:{{}}"
        self.seconds = seconds
        self.most = most
        self._local: dict[int, tuple[str, float, object]] = {}

    def changed(self, license_id: int) -> None:
        """What the license's copy holds changed: every process reads it again."""
        key = self.key.format(license_id)
        cache.delete(key)
        transaction.on_commit(lambda: cache.delete(key))

    def _version(self, license_id: int) -> str | None:
        key = self.key.format(license_id)
        token = cache.get(key)
        if token is None:
            cache.add(key, uuid.uuid4().hex, None)
            token = cache.get(key)
        return token

    def get(self, license_id: int, load: Callable[[], object]):
        """The license's copy, from this process when still current, else `load()` (and kept)."""
        token = self._version(license_id)
        held = self._local.get(license_id)
        if token is not None and held is not None and held[0] == token and time.monotonic() < held[1]:
            return held[2]
        value = load()
        if token is not None:
            if len(self._local) >= self.most:
                self._local.clear()  # the licenses still writing read theirs again
            self._local[license_id] = (token, time.monotonic() + self.seconds, value)
        return value
