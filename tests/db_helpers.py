"""Helpers for tests that interleave PostgreSQL transactions in threads."""

import time

from django.db import connection


def wait_for_a_lock_wait(timeout: float = 10.0) -> None:
    """Return once another session of the test database waits on a lock (deterministic interleaving)."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.01)
    raise AssertionError("the second session never waited for the first one's lock")
