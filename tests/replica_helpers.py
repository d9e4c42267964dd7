"""A real streaming replica for the tests: a throwaway primary and its standby, each a `postgres` of its own.

Why a primary of its own and not the suite's server: `pg_basebackup` copies a whole cluster, every database on it,
and the suite's server may hold a developer's million-ticket benchmark (gigabytes). A primary made by `initdb` in a
temporary folder holds only what the test puts in it; the replica is `pg_basebackup -R` of it, streaming (`-X
stream`) on another port: the same machinery as production, started and stopped by the test.

The server binaries come from `pg_config --bindir` (Debian: /usr/lib/postgresql/<major>/bin). PostgreSQL refuses
to run as root: as root (CI) every server command runs as the `postgres` user through `runuser`.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg


def server_bindir() -> Path | None:
    try:
        bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(bindir.strip())
    return path if (path / "postgres").exists() and (path / "initdb").exists() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """One `postgres` process on 127.0.0.1:`port` with its data in `data`."""

    def __init__(self, bindir: Path, data: Path, port: int, as_user: list[str]):
        self.bindir, self.data, self.port, self.as_user = bindir, data, port, as_user
        self.process: subprocess.Popen | None = None

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def start(self) -> None:
        log = open(self.data.parent / f"{self.data.name}.log", "ab")  # noqa: SIM115 (the server keeps it)
        self.process = subprocess.Popen(
            [*self.as_user, str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=1).close()
                return
            except psycopg.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"postgres on port {self.port} did not start: see {log.name}"
                    ) from None
                time.sleep(0.2)

    def execute(self, sql: str, dbname: str = "postgres"):
        with psycopg.connect(self.url(dbname), autocommit=True) as connection:
            cursor = connection.execute(sql)
            return cursor.fetchall() if cursor.description else None

    def kill(self) -> None:
        """SIGKILL, as a crashed machine would: no shutdown, open connections cut."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # fast shutdown (the group: runuser and its postgres)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


class StreamingPair:
    """`primary` and `replica` (a hot standby streaming from it); `close()` stops both and removes their data."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="helpdesk-replica-"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses root: its own user runs it
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.primary = Cluster(bindir, self.root / "primary", _free_port(), self.as_user)
        self.replica = Cluster(bindir, self.root / "replica", _free_port(), self.as_user)

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> StreamingPair:
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.primary.data), "-U", "postgres", "--auth=trust",
            "--no-sync", "-E", "UTF8", "--locale=C.UTF-8",
        )  # fmt: skip
        settings = (
            "listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = off\n"
            "wal_level = replica\nmax_wal_senders = 5\nhot_standby = on\nshared_buffers = 32MB\n"
            "max_standby_streaming_delay = 30s\n"
        )
        with open(self.primary.data / "postgresql.conf", "a") as conf:
            conf.write(settings)
        with open(self.primary.data / "pg_hba.conf", "a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")
        self.primary.start()
        self._run(
            str(self.bindir / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", "postgres",
            "-D", str(self.replica.data), "-R", "-X", "stream", "-c", "fast", "--no-sync",
        )  # fmt: skip
        self.replica.start()
        return self

    def wait_until_replayed(self, timeout: float = 30) -> None:
        """Until the replica has replayed everything the primary has written so far."""
        (target,) = self.primary.execute("SELECT pg_current_wal_insert_lsn()::text")[0]
        deadline = time.monotonic() + timeout
        while True:
            rows = self.replica.execute(f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")
            if rows[0][0]:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the replica did not catch up")
            time.sleep(0.1)

    def close(self) -> None:
        self.replica.stop()
        self.primary.stop()
        shutil.rmtree(self.root, ignore_errors=True)
