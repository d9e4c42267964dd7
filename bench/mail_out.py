"""Time from an agent's reply to the mail leaving: PATCH /v1/tickets/{ID} with a message (in-process, real
commits) → outbox row → Celery task on Redis → a real Celery worker (separate process) → SMTP → an aiosmtpd
sink on loopback, which stamps the arrival. The worker is idle between replies (one at a time, with a gap).

Run by hand, never in the test suite (it migrates and writes to the database it is given):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_mailout REDIS_URL=redis://127.0.0.1:6379/14 \
      .venv/bin/python bench/mail_out.py --replies 100

Prints p50/p95/p99/max of the reply → received latency and of the PATCH alone.
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Sink:
    """Records the arrival time of each message by its X-HelpDesk-Message-ID (the outbox row)."""

    def __init__(self):
        self.arrivals: dict[str, float] = {}
        self.event = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        now = time.perf_counter()
        from email import message_from_bytes, policy

        message = message_from_bytes(envelope.content, policy=policy.default)
        with self.event:
            self.arrivals[message["X-HelpDesk-Message-ID"]] = now
            self.event.notify_all()
        return "250 OK"

    def wait_for(self, key: str, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        with self.event:
            while key not in self.arrivals:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.event.wait(left)
            return self.arrivals[key]


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.5, help="seconds of idle worker between replies")
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes (make run uses 2)")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        print("Set DATABASE_URL and REDIS_URL (a real worker needs the Redis broker).", file=sys.stderr)
        return 2

    import logging

    from aiosmtpd.controller import Controller

    logging.getLogger("mail.log").setLevel(logging.WARNING)

    sink = Sink()
    port = _free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    os.environ.update(
        {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(port),
            "DJANGO_SETTINGS_MODULE": "helpdesk.settings",
            "DEBUG": "false",
            "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-only-" + "x" * 50),
        }
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from rest_framework.test import APIClient

    from accounts import services as accounts_services
    from helpdesk.celery import app
    from templates_app.models import OutboundMessage
    from tickets import services as ticket_services

    call_command("migrate", verbosity=0)
    app.control.purge()  # nothing left over from an earlier run

    worker = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/celery"), "-A", "helpdesk", "--quiet", "worker", "--loglevel=WARNING",
            f"--concurrency={args.concurrency}", "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-n", f"bench-{uuid.uuid4().hex[:6]}@%h",
        ],
        cwd=ROOT,
        env=os.environ.copy(),
        start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(60):
            if app.control.ping(timeout=0.5):
                break
        else:
            print("The worker did not start.", file=sys.stderr)
            return 1

        suffix = uuid.uuid4().hex[:8]
        license = accounts_services.license_create(
            owner_email=f"bench-{suffix}@example.com", owner_name="Bench", company_name="Bench Inc"
        )
        owner = license.agents.get()
        _, token = accounts_services.token_issue(account=owner.account, name="bench")
        client = APIClient(HTTP_USER_AGENT="bench/1.0")
        credentials = base64.b64encode(f"{owner.account_id}:{token}".encode()).decode()
        client.credentials(HTTP_AUTHORIZATION=f"Basic {credentials}")
        ticket = ticket_services.ticket_create(
            license=license,
            subject="Where is my order?",
            requester={"email": "customer@example.com", "name": "Customer"},
            message={"text": "My order did not arrive."},
            author_type="client",
        )

        # one warm-up reply (connections, imports in the worker)
        latencies, patches, lost = [], [], 0
        for i in range(args.replies + 1):
            time.sleep(args.gap)
            started = time.perf_counter()
            response = client.patch(
                f"/v1/tickets/{ticket.pk}", {"message": {"text": f"Answer {i}"}}, format="json"
            )
            patched = time.perf_counter()
            assert response.status_code == 200, response.content
            # one recipient, one reply at a time: the newest row is this reply's mail
            row = OutboundMessage.objects.filter(ticket_id=ticket.pk).order_by("-created_at").first()
            arrived = sink.wait_for(str(row.pk), timeout=30)
            if i == 0:
                continue
            if arrived is None:
                lost += 1
                continue
            latencies.append(arrived - started)
            patches.append(patched - started)

        def line(name, values):
            ms = [v * 1000 for v in values]
            return (
                f"{name:<22} n={len(ms):<4} p50={percentile(ms, 50):7.1f} ms  p95={percentile(ms, 95):7.1f} ms  "
                f"p99={percentile(ms, 99):7.1f} ms  max={max(ms):7.1f} ms  mean={statistics.mean(ms):7.1f} ms"
            )

        print(
            f"database {connection.vendor}, broker Redis, worker concurrency {args.concurrency}, gap {args.gap}s"
        )
        print(line("reply -> received", latencies))
        print(line("PATCH alone", patches))
        if lost:
            print(f"{lost} mail(s) did not arrive within 30 s")
        return 0 if not lost else 1
    finally:
        worker.send_signal(signal.SIGTERM)  # a warm shutdown: the worker stops its own children
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
        controller.stop()


if __name__ == "__main__":
    sys.exit(main())
