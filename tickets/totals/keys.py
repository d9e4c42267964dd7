"""The license's search generation (a row in PostgreSQL) and the cache keys the totals are kept under."""

from __future__ import annotations

from tickets.models import SearchGeneration

COUNT_TTL_SECONDS = 300

GENERATION_SQL = f"COALESCE((SELECT value FROM {SearchGeneration._meta.db_table} WHERE license_id = %s), 0)"


def generation(license_id: int) -> int:
    return SearchGeneration.objects.filter(pk=license_id).values_list("value", flat=True).first() or 0


def count_key(license_id: int, generation: int, digest: str) -> str:
    return f"tickets:count:{license_id}:{generation}:{digest}"


def registry_key(license_id: int) -> str:
    # v2: entries are (sql, params, count ms, last used); a process of the previous release reads its own key
    return f"tickets:countsets2:{license_id}"


def step_key(license_id: int, generation: int, digest: str) -> str:
    """-> (the next generation, the set's count difference): written by the write that left `generation`."""
    return f"tickets:countstep:{license_id}:{generation}:{digest}"


def counting_key(license_id: int, digest: str) -> str:
    return f"tickets:counting:{license_id}:{digest}"


def seen_key(license_id: int, digest: str) -> str:
    return f"tickets:countseen:{license_id}:{digest}"


def latest_key(license_id: int, digest: str) -> str:
    """-> (generation, count): the newest count known of the set, where a reader's roll forward starts."""
    return f"tickets:countlatest:{license_id}:{digest}"
