"""Soak of the embedded default (`make run` with nothing set): the worker with beat, runserver and smtp_inbound on
a fresh SQLite var/ folder, with a steady trickle of agent tickets and replies (API) and customer mail (SMTP),
an SMTP sink and a webhook receiver on loopback. Prints what was written, what arrived, duplicates, losses and
`database is locked` lines. Run by hand:

    .venv/bin/python bench/embedded_soak.py --minutes 10
"""

from __future__ import annotations

import argparse
import os
import smtplib
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
for name in ("DATABASE_URL", "REDIS_URL"):
    os.environ.pop(name, None)

from tests.embedded_helpers import embedded_service, rows, wait  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--every", type=float, default=1.0, help="seconds between two rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, embedded_service(Path(folder)) as service:
        client, sink, receiver = service["client"], service["sink"], service["receiver"]
        for event_type in ("tickets.create", "tickets.events.message"):
            client.post(
                "/v1/webhooks", json={"name": event_type, "url": receiver.url, "eventType": event_type}
            )
        errors: Counter = Counter()
        started, n = time.monotonic(), 0
        while time.monotonic() - started < args.minutes * 60:
            n += 1
            body = {"subject": f"Order {n}", "requester": {"email": f"c{n}@example.com"},
                    "message": {"text": "Your order left today."}}  # fmt: skip
            created = client.post("/v1/tickets", json=body)
            if created.status_code == 201:
                reply = client.patch(
                    f"/v1/tickets/{created.json()['ID']}", json={"message": {"text": "News."}}
                )
                errors[f"reply {reply.status_code}"] += reply.status_code != 200
            else:
                errors[f"create {created.status_code}"] += 1
            if n % 3 == 0:
                message = (f"From: <m{n}@example.com>\r\nTo: {service['license']['address']}\r\nSubject: Help {n}"
                           f"\r\nMessage-ID: <in-{n}@example.com>\r\n\r\nMy order {n} is late.\r\n")  # fmt: skip
                with smtplib.SMTP("127.0.0.1", service["smtp_port"], timeout=30) as smtp:
                    smtp.sendmail(f"m{n}@example.com", [service["license"]["address"]], message.encode())
            time.sleep(args.every)
        ran = time.monotonic() - started

        def finished():
            return not rows(service["db"], "SELECT 1 FROM templates_app_outboundmessage WHERE status IN "
                                           "('pending', 'sending') UNION ALL SELECT 1 FROM tickets_webhookdelivery "
                                           "WHERE status = 'pending'")  # fmt: skip

        wait(finished, 300, "the outbox to drain")
        time.sleep(2)
        mails = dict(
            rows(service["db"], "SELECT replace(id, '-', ''), status FROM templates_app_outboundmessage")
        )
        hooks = dict(rows(service["db"], "SELECT replace(id, '-', ''), status FROM tickets_webhookdelivery"))
        arrived = Counter(value.replace("-", "") for value in sink.ids.elements())
        delivered = Counter(r.headers["X-Webhook-ID"].replace("-", "") for r in receiver.received)
        log = service["log"].read_text()
        print(f"ran {ran / 60:.1f} min, {n} rounds; API errors: {dict(+errors) or 0}")
        print(f"mail: {len(mails)} rows {dict(Counter(mails.values()))}, {sum(arrived.values())} arrived, "
              f"{sum(c - 1 for c in arrived.values() if c > 1)} duplicated, {len(set(mails) - set(arrived))} lost")  # fmt: skip
        print(f"webhooks: {len(hooks)} rows {dict(Counter(hooks.values()))}, {sum(delivered.values())} arrived, "
              f"{sum(c - 1 for c in delivered.values() if c > 1)} duplicated, {len(set(hooks) - set(delivered))} lost")  # fmt: skip
        print(
            f"'database is locked' in the logs: {log.count('database is locked')}; Tracebacks: {log.count('Traceback')}"
        )


if __name__ == "__main__":
    main()
