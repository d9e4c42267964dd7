"""The embedded default (`make run` with nothing set: SQLite, the file-system queue, a worker with beat, the web
server and the SMTP listener as separate processes) sends every mail and every webhook exactly once.

Real processes, real sockets: an SMTP sink and a webhook receiver on loopback count what arrives (by the row's
X-HelpDesk-Message-ID / X-Webhook-ID), while API clients and inbound mail write concurrently with the worker.
"""

from __future__ import annotations

import smtplib
import threading
import time
from collections import Counter

import pytest
from django.conf import settings

from tests import template_db
from tests.embedded_helpers import embedded_service, rows, wait

# Its processes run on SQLite whatever the pass: once, in the SQLite pass, is enough.
pytestmark = pytest.mark.skipif(
    settings.IS_POSTGRES, reason="the embedded default's test runs in the SQLite pass"
)

ROUNDS = 10  # per client thread
CLIENTS = 3


@pytest.fixture
def embedded(tmp_path, django_db_setup):
    # the processes start from a copy of the migrated template this run's test databases came from (if they did)
    template = template_db.sqlite_template_file()
    with embedded_service(tmp_path, migrated=template if template.exists() else None) as service:
        yield service


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
    threads = [threading.Thread(target=agent_writes, args=(n,)) for n in range(CLIENTS - 1)]
    threads.append(threading.Thread(target=customers_write))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []

    # then every stored mail and delivery is finished, each arrived once, and no process met a locked database
    def finished():
        open_mail = rows(embedded["db"], "SELECT count(*) FROM templates_app_outboundmessage "
                                          "WHERE status IN ('pending', 'sending')")[0][0]  # fmt: skip
        open_hooks = rows(embedded["db"], "SELECT count(*) FROM tickets_webhookdelivery "
                                           "WHERE status = 'pending'")[0][0]  # fmt: skip
        return open_mail == 0 and open_hooks == 0

    wait(finished, 60, "the outbox to drain")
    time.sleep(1)  # anything sent twice would be on its way now
    mails = dict(
        rows(embedded["db"], "SELECT replace(id, '-', ''), status FROM templates_app_outboundmessage")
    )
    hooks = dict(rows(embedded["db"], "SELECT replace(id, '-', ''), status FROM tickets_webhookdelivery"))
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
