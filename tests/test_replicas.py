"""Read replicas (helpdesk/replicas.py) against a real streaming replica: the service runs as gunicorn with
DATABASE_URL on a primary and DATABASE_REPLICA_URLS on its hot standby (tests/replica_helpers.py starts both).

One test walks the whole story, so that one xdist worker builds the pair once: a caller's search always sees its
own writes; a replica whose replay is paused serves the callers it is fresh enough for (and nothing older than
their last write), the others read the primary; a killed replica costs no error.
"""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests import template_db
from tests.replica_helpers import StreamingPair, server_bindir

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.postgres, pytest.mark.redis]
MAX_LAG = 8  # DATABASE_REPLICA_MAX_LAG_SECONDS: how far behind a replica may serve callers who wrote nothing

SECOND_CALLER = """
from accounts import services
from accounts.models import ROLE_NORMAL, STATUS_ACTIVE, Account, Agent, License
license = License.objects.get()
account = Account.objects.create_user(email="second@example.com", name="Second")
Agent.objects.create(license=license, account=account, email=account.email, name="Second",
                     roles=[ROLE_NORMAL], status=STATUS_ACTIVE)
_, token = services.token_issue(account=account, name="second")
print(f"SECOND_CALLER={account.pk}:{token}")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def pair():
    bindir = server_bindir()
    if bindir is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL's server binaries (pg_config --bindir) are missing, and CI=true")
        pytest.skip("PostgreSQL's server binaries (initdb, postgres, pg_basebackup) are not installed")
    streaming = StreamingPair(bindir).start()
    yield streaming
    streaming.close()


class Service:
    """gunicorn serving the project on the pair: writes on the primary, designated reads on the replica."""

    def __init__(self, pair: StreamingPair, tmp_path: Path, migrated: bytes | None):
        pair.primary.execute("CREATE DATABASE helpdesk")
        pair.wait_until_replayed()  # the service's connections to the replica need the database there
        self.env = {
            **os.environ,
            "DATABASE_URL": pair.primary.url("helpdesk"),
            "DATABASE_REPLICA_URLS": pair.replica.url("helpdesk"),
            "HELPDESK_VAR_DIR": str(tmp_path / "var"),
            "DEBUG": "true",
            "DATABASE_REPLICA_MAX_LAG_SECONDS": str(MAX_LAG),
        }
        if migrated is not None:  # the test run's migrated template: ~14 s of CPU less than migrating again
            restore = [str(pair.bindir / "pg_restore"), "--no-owner", "--host", "127.0.0.1", "--port",
                       str(pair.primary.port), "--username", "postgres", "--dbname", "helpdesk"]  # fmt: skip
            subprocess.run(restore, input=migrated, capture_output=True, check=True)
        else:
            self._manage("migrate", "--noinput", "-v0")
        demo = self._manage("demo_license", "--base-url", "http://127.0.0.1")
        account, token = re.search(r"ACCOUNT_ID=(\S+) TOKEN=(\S+)", demo).groups()
        self.first = self._client(account, token)
        created = self._manage("shell", "-c", SECOND_CALLER)
        self.second = self._client(*re.search(r"SECOND_CALLER=(\S+):(\S+)", created).groups())
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "helpdesk.wsgi:application", "-b", f"127.0.0.1:{port}",
             "-w", "1", "--threads", "2", "--log-level", "warning"],
            cwd=ROOT, env=self.env, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{self.url}/v1/openapi.json", timeout=2)
                break
            except httpx.TransportError:
                assert self.process.poll() is None and time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)

    def _manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    @staticmethod
    def _client(account: str, token: str) -> dict:
        basic = base64.b64encode(f"{account}:{token}".encode()).decode()
        return {"Authorization": f"Basic {basic}", "User-Agent": "replica-test/1.0"}

    def create_ticket(self, caller: dict, subject: str) -> str:
        response = httpx.post(
            f"{self.url}/v1/tickets",
            headers=caller,
            json={"subject": subject, "requester": {"email": "c@example.com"}, "message": {"text": "Hi"}},
            timeout=30,
        )
        assert response.status_code == 201, response.text
        return response.json()["ID"]

    def search(self, caller: dict, **params) -> tuple[set[str], int]:
        response = httpx.get(f"{self.url}/v1/tickets", headers=caller, params=params, timeout=30)
        assert response.status_code == 200, response.text
        return {doc["ID"] for doc in response.json()}, int(response.headers["X-Total-Results"])

    def get(self, caller: dict, path: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", headers=caller, timeout=30)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


@pytest.fixture
def migrated(django_db_setup, django_db_blocker) -> bytes | None:
    """A dump of the migrated template this run's test databases are copies of."""
    with django_db_blocker.unblock():
        return template_db.template_dump()


def test_searches_read_the_replica_only_when_it_has_the_callers_last_write(pair, tmp_path, migrated):
    service = Service(pair, tmp_path, migrated)
    try:
        # a caller's write, then its search: always there (the replica, once replayed, or the primary)
        first_ticket = service.create_ticket(service.first, "Written first")
        found, total = service.search(service.first)
        assert first_ticket in found and total == 1

        # the replica stops replaying; the first caller writes again
        pair.wait_until_replayed()
        pair.replica.execute("SELECT pg_wal_replay_pause()")
        second_ticket = service.create_ticket(service.first, "Written while the replica is paused")

        # the writer sees its write (the paused replica is behind its last commit: the primary answers) ...
        found, total = service.search(service.first)
        assert found == {first_ticket, second_ticket} and total == 2
        # ... while the other caller, who wrote nothing, is served by the replica: as of before the pause.
        # (This is what shows the replica is used at all.)
        found, total = service.search(service.second)
        assert found == {first_ticket} and total == 1
        # the views' counts and the reports read there too, and answer
        assert service.get(service.second, "/v1/views/counts").status_code == 200
        assert service.get(service.second, "/v1/reports/newTickets?from=-7d").status_code == 200

        # but not for long: once the replica is more than one to two MAX_LAG periods behind, nobody reads it
        deadline = time.monotonic() + 4 * MAX_LAG + 30
        while service.search(service.second)[0] != {first_ticket, second_ticket}:
            assert time.monotonic() < deadline, "a replica stuck far behind was still read"
            time.sleep(1)

        # the other caller writes: from now on the paused replica is too old for it as well
        third_ticket = service.create_ticket(service.second, "The second caller's")
        found, total = service.search(service.second)
        assert found == {first_ticket, second_ticket, third_ticket} and total == 3

        # replay resumes: the replica catches up and serves both again, with everything
        pair.replica.execute("SELECT pg_wal_replay_resume()")
        pair.wait_until_replayed()
        for caller in (service.first, service.second):
            found, total = service.search(caller)
            assert found == {first_ticket, second_ticket, third_ticket} and total == 3

        # the replica dies: every search still answers, from the primary, without an error
        pair.replica.kill()
        fourth_ticket = service.create_ticket(service.first, "After the replica died")
        for caller in (service.second, service.first, service.second):
            found, total = service.search(caller)
            assert fourth_ticket in found and total == 4
        assert service.get(service.second, "/v1/views/counts").status_code == 200
    finally:
        service.stop()
