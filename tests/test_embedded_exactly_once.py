"""The embedded default (`make run` with nothing set: SQLite, the file-system queue, a worker with beat, the web
server and the SMTP listener as separate processes) sends every mail and every webhook exactly once.

Real processes, real sockets: an SMTP sink and a webhook receiver on loopback count what arrives (by the row's
X-HelpDesk-Message-ID / X-Webhook-ID), while API clients and inbound mail write concurrently with the worker.
"""

from __future__ import annotations

import base64
import os
import re
import smtplib
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.webhook_helpers import Receiver

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 10  # per client thread
CLIENTS = 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Sink:
    """What an SMTP relay accepted, by our row ID."""

    def __init__(self):
        self.ids: Counter = Counter()
        self.message_ids: Counter = Counter()

    async def handle_DATA(self, server, session, envelope):
        from email import message_from_bytes, policy

        message = message_from_bytes(envelope.content, policy=policy.default)
        self.ids[message["X-HelpDesk-Message-ID"]] += 1
        self.message_ids[message["Message-ID"]] += 1
        return "250 Message accepted"


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


@pytest.fixture
def embedded(tmp_path):
    """The processes of `make run` on a fresh var/ folder, with outbound mail pointed at a sink."""
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
    processes = [
        subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        for argv in commands.values()
    ]
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
        _wait(up, 30, "the web server")
        yield {
            "client": client, "sink": sink, "receiver": receiver, "smtp_port": smtp_port, "license": credentials,
            "db": tmp_path / "helpdesk.sqlite3", "log": tmp_path / "processes.log",
        }  # fmt: skip
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()
        client.close()
        relay.stop()
        receiver.stop()
        log.close()


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db, timeout=20) as connection:
        return connection.execute(sql).fetchall()


def test_every_mail_and_webhook_arrives_exactly_once_and_nothing_is_locked(embedded):
    client, sink, receiver = embedded["client"], embedded["sink"], embedded["receiver"]
    # given webhooks on new tickets and on every message
    for event_type in ("tickets.create", "tickets.events.message"):
        response = client.post(
            "/v1/webhooks", json={"name": event_type, "url": receiver.url, "eventType": event_type}
        )
        assert response.status_code == 201, response.text
    inbound = embedded["license"]["address"]
    failures: list[str] = []

    def agent_writes(n: int):
        # an agent opens a ticket for a customer (a reply mail) and answers it again (another)
        for i in range(ROUNDS):
            body = {"subject": f"Order {n}-{i}", "requester": {"email": f"c{n}-{i}@example.com"},
                    "message": {"text": "Your order left today."}}  # fmt: skip
            created = client.post("/v1/tickets", json=body)
            if created.status_code != 201:
                failures.append(f"create {created.status_code} {created.text[:200]}")
                continue
            reply = client.patch(
                f"/v1/tickets/{created.json()['ID']}", json={"message": {"text": "More news."}}
            )
            if reply.status_code != 200:
                failures.append(f"reply {reply.status_code} {reply.text[:200]}")

    def customers_write():
        # customers write in by mail (a ticket and an acknowledgement each)
        for i in range(ROUNDS):
            message = (
                f"From: Customer {i} <m{i}@example.com>\r\nTo: {inbound}\r\nSubject: Help {i}\r\n"
                f"Message-ID: <in-{i}@example.com>\r\n\r\nMy order {i} is late.\r\n"
            )
            with smtplib.SMTP("127.0.0.1", embedded["smtp_port"], timeout=30) as smtp:
                smtp.sendmail(f"m{i}@example.com", [inbound], message.encode())

    # when they write at the same time as the worker sends
    started = time.monotonic()
    threads = [threading.Thread(target=agent_writes, args=(n,)) for n in range(CLIENTS - 1)]
    threads.append(threading.Thread(target=customers_write))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []

    # then every stored mail and delivery is finished, each arrived once, and no process met a locked database
    def finished():
        open_mail = _rows(embedded["db"], "SELECT count(*) FROM templates_app_outboundmessage "
                                          "WHERE status IN ('pending', 'sending')")[0][0]  # fmt: skip
        open_hooks = _rows(embedded["db"], "SELECT count(*) FROM tickets_webhookdelivery "
                                           "WHERE status = 'pending'")[0][0]  # fmt: skip
        return open_mail == 0 and open_hooks == 0

    _wait(finished, 45, "the outbox to drain")
    time.sleep(1)  # anything sent twice would be on its way now
    mails = dict(
        _rows(embedded["db"], "SELECT replace(id, '-', ''), status FROM templates_app_outboundmessage")
    )
    hooks = dict(_rows(embedded["db"], "SELECT replace(id, '-', ''), status FROM tickets_webhookdelivery"))
    # (2 replies per agent ticket, 1 acknowledgement per customer mail) and (1 create + 1 message per ticket)
    assert len(mails) == (CLIENTS - 1) * ROUNDS * 2 + ROUNDS
    assert len(hooks) == ((CLIENTS - 1) * ROUNDS + ROUNDS) * 2 + (CLIENTS - 1) * ROUNDS
    assert set(mails.values()) == {"sent"}
    assert set(hooks.values()) == {"succeeded"}
    arrived = Counter(value.replace("-", "") for value in sink.ids.elements())
    assert arrived == Counter(mails.keys()), "a mail was lost or sent twice"
    assert set(sink.message_ids.values()) == {1}
    delivered = Counter(r.headers["X-Webhook-ID"].replace("-", "") for r in receiver.received)
    assert delivered == Counter(hooks.keys()), "a webhook was lost or sent twice"
    log = embedded["log"].read_text()
    assert "database is locked" not in log
    assert "Traceback" not in log, log[-3000:]
    assert time.monotonic() - started < 60
