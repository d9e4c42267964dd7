"""The embedded default's processes (`make run` with nothing set: SQLite, the file-system queue, a worker with
beat, runserver and smtp_inbound) on a fresh var/ folder, with outbound mail going to an SMTP sink and webhooks to
a receiver on loopback, both counting what arrives. Used by tests/test_embedded_exactly_once.py and
bench/embedded_soak.py."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

from tests.webhook_helpers import Receiver

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Sink:
    """What an SMTP relay accepted, by our row ID."""

    def __init__(self):
        self.ids: Counter = Counter()
        self.message_ids: Counter = Counter()

    hold = 0.0  # seconds to hold the next 250 (once): a relay slow to answer
    held = None  # set (an asyncio-free flag) while a 250 is being held

    async def handle_DATA(self, server, session, envelope):
        import asyncio
        from email import message_from_bytes, policy

        message = message_from_bytes(envelope.content, policy=policy.default)
        self.ids[message["X-HelpDesk-Message-ID"]] += 1
        self.message_ids[message["Message-ID"]] += 1
        if self.hold:
            # the message is accepted (a real relay has queued it): only the answer is late
            hold, self.hold, self.held = self.hold, 0.0, message["X-HelpDesk-Message-ID"]
            await asyncio.sleep(hold)
        return "250 Message accepted"


def wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


@contextlib.contextmanager
def embedded_service(tmp_path: Path, *, migrated: Path | None = None):
    """The processes of `make run` on a fresh var/ folder, with outbound mail pointed at a sink. `migrated`: an
    empty migrated SQLite database to copy instead of running `manage.py migrate` (the test's template, which the
    test run has migrated already: ~17 s of CPU)."""
    from aiosmtpd.controller import Controller

    sink = Sink()
    relay = Controller(sink, hostname="127.0.0.1", port=_free_port())
    relay.start()
    receiver = Receiver().start()
    web_port, smtp_port = _free_port(), _free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "CELERY_TASK_ALWAYS_EAGER")
    }
    env.update(
        HELPDESK_VAR_DIR=str(tmp_path),
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(relay.port),
        WEBHOOKS_ALLOW_PRIVATE="true",
        NOTIFICATION_BATCH_SECONDS="1",
        HELPDESK_APP_URL=f"http://127.0.0.1:{web_port}",
    )
    manage = [sys.executable, "manage.py"]
    if migrated is not None:
        shutil.copyfile(migrated, tmp_path / "helpdesk.sqlite3")
    else:
        subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    demo = subprocess.run(
        [*manage, "demo_license", "--base-url", f"http://127.0.0.1:{web_port}"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    credentials = {
        "accountID": re.search(r"ACCOUNT_ID=(\S+)", demo.stdout).group(1),
        "token": re.search(r"TOKEN=(\S+)", demo.stdout).group(1),
        "address": re.search(r"Its mail address .*: (\S+@\S+)", demo.stdout).group(1),
    }
    log = (tmp_path / "processes.log").open("w")
    commands = {
        "worker": [sys.executable, "-m", "celery", "-A", "helpdesk", "worker", "--beat", "--loglevel=INFO",
                   "--concurrency=2", f"--schedule={tmp_path / 'celerybeat-schedule'}"],
        "smtp": [*manage, "smtp_inbound", "--host", "127.0.0.1", "--port", str(smtp_port)],
        "web": [*manage, "runserver", f"127.0.0.1:{web_port}", "--noreload"],
    }  # fmt: skip
    processes: dict[str, subprocess.Popen] = {}

    def start(name: str) -> subprocess.Popen:
        processes[name] = subprocess.Popen(
            commands[name], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        return processes[name]

    for name in commands:
        start(name)
    auth = base64.b64encode(f"{credentials['accountID']}:{credentials['token']}".encode()).decode()
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{web_port}", headers={"Authorization": f"Basic {auth}"}, timeout=30
    )

    def up():
        try:
            return client.get("/v1/licenses").status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait(up, 30, "the web server")
        yield {
            "client": client, "sink": sink, "receiver": receiver, "smtp_port": smtp_port, "license": credentials,
            "db": tmp_path / "helpdesk.sqlite3", "log": tmp_path / "processes.log",
            "processes": processes, "start": start, "queue": tmp_path / "queue",
        }  # fmt: skip
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()
        client.close()
        relay.stop()
        receiver.stop()
        log.close()


def rows(db: Path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db, timeout=20)) as connection:
        return connection.execute(sql).fetchall()
