"""Per-process copies of what a license reads on every write (its rules, its SLA policies), kept under a version.

Each process keeps a copy per license with the version it was read at: a token in the cache (Redis), dropped by
every change (`changed`: now and again after its commit, so that no process keeps what it read before the commit
under the new token) and drawn anew by the next reader BEFORE it reads the rows. A write then costs one cache read
instead of a query. Redis away: no token, the rows are read every time (correct, slower). `seconds` bounds how long
a process trusts its copy should a drop have been lost; `most` bounds the memory (licenses held per process).
Measured for the rules (bench/rules_cost.py): reading and decoding them on every write cost ~40 us of CPU per rule.

`read_together()`: inside it, the first version asked for a license fetches the versions of every copy of that
license at once (one MGET), and the rest of the block uses them. A mail in reads five (its license, the rules, the
SLA policies, the webhooks, the acknowledgement's own addresses): five round trips became one (bench/README.md,
"Issue 34: mail in, versions in one read"). Safe because each version is still drawn before its copy's rows are
read (earlier than without the block, never later), and a `changed` inside the block forgets what it read.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable

from django.core.cache import cache
from django.db import transaction

_BY_LICENSE: list[VersionedCopies] = []  # the copies kept per license ID: read together
_read = threading.local()  # .versions: {license_id: {key: token or None}} inside read_together(), else absent


@contextlib.contextmanager
def read_together():
    """Versions asked for inside this block are read per license in one round trip (not nested: the outer wins)."""
    if getattr(_read, "versions", None) is not None:
        yield
        return
    _read.versions = {}
    try:
        yield
    finally:
        _read.versions = None


class VersionedCopies:
    def __init__(self, name: str, *, seconds: float = 300, most: int = 1000, by_license: bool = True):
        """`by_license`: keyed by a license's ID (read with the license's other copies in `read_together`)."""
        self.key = f"{name}:version:{{}}"
        self.seconds = seconds
        self.most = most
        self._local: dict[int, tuple[str, float, object]] = {}
        if by_license:
            _BY_LICENSE.append(self)

    def changed(self, license_id: int) -> None:
        """What the license's copy holds changed: every process reads it again."""
        key = self.key.format(license_id)
        read = getattr(_read, "versions", None)
        if read is not None:
            read.pop(license_id, None)  # this block reads them again
        cache.delete(key)
        transaction.on_commit(lambda: cache.delete(key))

    def _version(self, license_id: int) -> str | None:
        key = self.key.format(license_id)
        read = getattr(_read, "versions", None)
        if read is not None:
            tokens = read.get(license_id)
            if tokens is None or key not in tokens:
                keys = [copies.key.format(license_id) for copies in _BY_LICENSE]
                if key not in keys:
                    keys.append(key)
                tokens = read[license_id] = dict.fromkeys(keys) | cache.get_many(keys)
            token = tokens[key]
            if token is None:
                token = tokens[key] = self._drawn(key)
            return token
        token = cache.get(key)
        if token is None:
            token = self._drawn(key)
        return token

    @staticmethod
    def _drawn(key: str) -> str | None:
        """A new version for a key that has none (another process's, should it draw one first)."""
        cache.add(key, uuid.uuid4().hex, None)
        return cache.get(key)

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
