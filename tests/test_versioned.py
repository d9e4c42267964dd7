"""helpdesk.versioned.read_together: the versions of a license's copies read in one round trip, with the same
invalidation as one read each (a change before the block is seen in it; a change inside it by the block itself)."""

from __future__ import annotations

import itertools

import pytest
from django.core.cache import cache

from helpdesk import versioned
from helpdesk.versioned import VersionedCopies, read_together

pytestmark = pytest.mark.django_db

_names = itertools.count()


@pytest.fixture
def copies():
    """Two copies kept by license (as the rules and the SLA policies are), and loaders that count their reads."""
    made = [VersionedCopies(f"test-versioned-{next(_names)}") for _ in range(2)]
    yield made
    for each in made:
        versioned._BY_LICENSE.remove(each)


def _loader(reads, value):
    def load():
        reads.append(value)
        return value

    return load


def test_a_block_reads_every_copy_s_version_of_the_license_in_one_round_trip(copies, monkeypatch):
    first, second = copies
    reads = []
    first.get(7, _loader(reads, "a"))
    second.get(7, _loader(reads, "b"))  # both held, under their versions
    calls = []
    for name in ("get", "get_many"):
        real = getattr(cache, name)
        monkeypatch.setattr(
            cache, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k)
        )
    with read_together():
        assert first.get(7, _loader(reads, "a2")) == "a"
        assert second.get(7, _loader(reads, "b2")) == "b"
    assert calls.count("get_many") == 1 and reads == ["a", "b"]
    if "redis" in type(cache).__module__:  # one MGET (the file cache's get_many gets each key)
        assert calls == ["get_many"]


def test_a_change_before_the_block_is_seen_in_it(copies):
    first, _ = copies
    reads = []
    first.get(7, _loader(reads, "old"))
    first.changed(7)  # another process's change: its version dropped
    with read_together():
        assert first.get(7, _loader(reads, "new")) == "new"
    with read_together():
        assert first.get(7, _loader(reads, "newer")) == "new"  # held under the version drawn in the block
    assert reads == ["old", "new"]


def test_a_change_inside_the_block_is_seen_by_its_next_read(copies):
    first, second = copies
    reads = []
    with read_together():
        assert first.get(7, _loader(reads, "old")) == "old"
        first.changed(7)
        assert first.get(7, _loader(reads, "new")) == "new"
        assert second.get(7, _loader(reads, "b")) == "b"
    with read_together():
        assert first.get(7, _loader(reads, "newer")) == "new"
    assert reads == ["old", "new", "b"]


def test_outside_a_block_nothing_is_remembered_between_reads(copies):
    first, _ = copies
    reads = []
    with read_together():
        first.get(7, _loader(reads, "old"))
    cache.delete(first.key.format(7))  # dropped after the block: the next read sees it
    assert first.get(7, _loader(reads, "new")) == "new"
    assert versioned._read.versions is None
