"""Test databases copied from one migrated template instead of migrated once per pytest-xdist worker.

Migrating from scratch costs ~14 s of one core's Python and as much again in PostgreSQL (74 migrations, their
backfills and concurrent index builds); the suite runs two workers per pass, and a developer's runs repeat it.
The first worker to get here builds `<test database>_tpl_<digest>`: the digest covers every migration file and
Django's version, so any change to a migration builds a new one (and drops the old ones). It is built under a
`_partial` name and renamed when the migrations have finished: a run killed half-way leaves no template that
looks complete. Each worker then gets `CREATE DATABASE … TEMPLATE`, a file copy (~0.3 s), and Django's own setup
with `keepdb` finds the database there and has nothing to migrate. Everything under one advisory lock (on the
server's maintenance database), so workers and concurrent runs of the same checkout never race.

On the embedded default (SQLite) the test database is in memory, one per worker, and migrating it cost ~17 s of
CPU per worker (measured 2026-11-26: 34 s of the SQLite pass's CPU on two workers). The template is a file,
`var/test-templates/sqlite_<digest>.sqlite3` (kept between runs, the digest also covering SQLite's version), built
the same way under a file lock; each worker copies it into its in-memory database with SQLite's backup API
(~0.1 s), as Django's own parallel runner does for its spawned workers.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sqlite3
import subprocess
from pathlib import Path

import django
from django.conf import settings
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent


def migrations_digest(*, extra: str = "") -> str:
    digest = hashlib.sha256(django.get_version().encode() + extra.encode())
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
    _prepared.update(template=template, lock_key=lock_key)
    return worker_name


_prepared: dict = {}  # the template and its lock's key, once prepare() has run in this process


def template_dump() -> bytes | None:
    """The migrated template as `pg_dump -Fc` writes it (for a database on another server: the replica test's
    primary), or None before prepare(). Under the template's lock: the dump is a session on the template, and
    CREATE DATABASE … TEMPLATE refuses a template that has one."""
    if not _prepared:
        return None
    connection = connections["default"]
    settings_dict = connection.settings_dict
    command = [
        "pg_dump", "--format=custom", "--host", settings_dict["HOST"] or "127.0.0.1",
        "--port", str(settings_dict["PORT"] or 5432), "--username", settings_dict["USER"] or "postgres",
        _prepared["template"],
    ]  # fmt: skip
    environment = {**os.environ, "PGPASSWORD": settings_dict["PASSWORD"] or ""}
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [_prepared["lock_key"]])
        try:
            return subprocess.run(command, env=environment, capture_output=True, check=True).stdout
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_prepared["lock_key"]])


def drop(name: str) -> None:
    connections.close_all()
    with connections["default"]._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {_quote(name)}")


def sqlite_in_memory(aliases) -> bool:
    """Whether this run's only test database is SQLite's in-memory one (the embedded default's)."""
    connection = connections["default"]
    return (
        set(aliases) == {"default"}
        and connection.vendor == "sqlite"
        and connection.creation.is_in_memory_db(connection.creation._get_test_db_name())
    )


def sqlite_template_file() -> Path:
    """Where the migrated SQLite template of the current migrations is (once a test run has built it)."""
    return (
        ROOT / "var" / "test-templates" / f"sqlite_{migrations_digest(extra=sqlite3.sqlite_version)}.sqlite3"
    )


def sqlite_template(setup_databases, teardown_databases, verbosity: int) -> Path:
    """The migrated SQLite template file, built first if missing (setup_databases and teardown_databases are
    django.test.utils's)."""
    template = sqlite_template_file()
    folder = template.parent
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "sqlite.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not template.exists():
            partial = template.with_suffix(".partial")
            for path in folder.glob(partial.name + "*"):  # with its -wal and -shm
                path.unlink()
            test_settings = connections["default"].settings_dict["TEST"]
            saved = test_settings.get("NAME")
            test_settings["NAME"] = str(partial)
            try:
                config = setup_databases(
                    verbosity=verbosity, interactive=False, aliases={"default"}, serialized_aliases=set()
                )
                teardown_databases(config, verbosity=verbosity, keepdb=True)
            finally:
                connections.close_all()
                test_settings["NAME"] = saved
            with contextlib.closing(sqlite3.connect(partial)) as built:  # one file, no -wal beside it
                built.execute("PRAGMA journal_mode=DELETE")
            partial.replace(template)
            for stale in folder.glob("sqlite_*.sqlite3"):
                if stale != template:
                    stale.unlink()
    return template


def sqlite_load(template: Path, *, serialize: bool) -> str:
    """Open the worker's in-memory test database as a copy of the template (what create_test_db leaves, without
    migrating); return the database NAME to restore at the end (Django's destroy_test_db)."""
    connection = connections["default"]
    old_name = connection.settings_dict["NAME"]
    test_name = connection.creation._get_test_db_name()
    connection.close()
    settings.DATABASES["default"]["NAME"] = connection.settings_dict["NAME"] = test_name
    connection.ensure_connection()  # the in-memory database lives as long as this connection
    with contextlib.closing(sqlite3.connect(f"file:{template}?mode=ro", uri=True)) as source:
        source.backup(connection.connection)
    if serialize:
        connection._test_serialized_contents = connection.creation.serialize_db_to_string()
    return old_name
