"""An SMTP (or LMTP) listener that feeds inbound_message_receive: `manage.py smtp_inbound --host H --port P
[--lmtp]`. Point an MTA's transport at it (docs/operations.md); `make run` starts it on port 2525."""

from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from templates_app.inbound.smtp import make_controller


class Command(BaseCommand):
    help = "Receive mail for the help desk over SMTP or LMTP (aiosmtpd)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=2525)
        parser.add_argument("--lmtp", action="store_true", help="speak LMTP (per-recipient replies)")
        parser.add_argument(
            "--workers", type=int, default=0, help="database threads (default 4; 1 on SQLite)"
        )

    def handle(self, *args, host, port, lmtp, workers, **options):
        if not workers:
            workers = 1 if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3") else 4
        controller = make_controller(host=host, port=port, lmtp=lmtp, workers=workers)
        controller.start()
        protocol = "LMTP" if lmtp else "SMTP"
        self.stdout.write(f"Receiving mail ({protocol}) on {host}:{port}; Ctrl-C stops.", ending="\n")
        self.stdout.flush()
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        try:
            stop.wait()
        finally:
            controller.stop()
