"""PostgreSQL test databases copied from one migrated template instead of migrated once per pytest-xdist worker.

Migrating from scratch costs ~14 s of one core's Python and as much again in PostgreSQL (74 migrations, their
backfills and concurrent index builds); the suite runs two workers per pass, and a developer's runs repeat it.
The first worker to get here builds `<test database>_tpl_<digest>`: the digest covers every migration file and
Django's version, so any change to a migration builds a new one (and drops the old ones). It is built under a
`_partial` name and renamed when the migrations have finished: a run killed half-way leaves no template that
looks complete. Each worker then gets `CREATE DATABASE … TEMPLATE`, a file copy (~0.3 s), and Django's own setup
with `keepdb` finds the database there and has nothing to migrate. Everything under one advisory lock (on the
server's maintenance database), so workers and concurrent runs of the same checkout never race.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import django
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent


def migrations_digest() -> str:
    digest = hashlib.sha256(django.get_version().encode())
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _database_exists(cursor, name: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
    return cursor.fetchone() is not None


def prepare(setup_databases, verbosity: int) -> str:
    """Leave the worker's test database (the default alias's TEST NAME) as a copy of the migrated template; return
    its name. `setup_databases` is django.test.utils.setup_databases, called to build the template."""
    connection = connections["default"]
    test_settings = connection.settings_dict.setdefault("TEST", {})
    worker_name = test_settings.get("NAME") or f"test_{connection.settings_dict['NAME']}"
    base = worker_name.rsplit("_gw", 1)[0]  # the same template for every xdist worker
    template = f"{base}_tpl_{migrations_digest()}"[:63]
    # one lock per test database name: checkouts testing on other names (another worktree) never wait for it
    lock_key = int.from_bytes(hashlib.sha256(base.encode()).digest()[:7], "big")
    with connection._nodb_cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")  # waiting for another worker's migrations takes a while
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock_key])
        try:
            if not _database_exists(cursor, template):
                partial = f"{template}_partial"[:63]
                cursor.execute(f"DROP DATABASE IF EXISTS {_quote(partial)}")
                test_settings["NAME"] = partial
                try:
                    setup_databases(
                        verbosity=verbosity, interactive=False, aliases={"default"}, serialized_aliases=set()
                    )
                finally:
                    connections.close_all()
                    test_settings["NAME"] = worker_name
                cursor.execute(f"ALTER DATABASE {_quote(partial)} RENAME TO {_quote(template)}")
                cursor.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                    [f"{base}\\_tpl\\_%", template],
                )
                for (stale,) in cursor.fetchall():
                    cursor.execute(f"DROP DATABASE IF EXISTS {_quote(stale)}")
            cursor.execute(f"DROP DATABASE IF EXISTS {_quote(worker_name)}")
            cursor.execute(f"CREATE DATABASE {_quote(worker_name)} TEMPLATE {_quote(template)}")
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_key])
    test_settings["NAME"] = worker_name
    return worker_name


def drop(name: str) -> None:
    connections.close_all()
    with connections["default"]._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {_quote(name)}")
