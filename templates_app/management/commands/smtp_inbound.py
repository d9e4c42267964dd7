"""An SMTP (or LMTP) listener that feeds inbound_message_receive: `manage.py smtp_inbound --host H --port P
[--lmtp] [--processes N] [--workers N]`. Point an MTA's transport at it (docs/operations.md); `make run` starts
it on port 2525. SIGTERM or SIGINT stops it (the mails being stored are finished first) with exit status 0."""

from __future__ import annotations

import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from templates_app.inbound.smtp import make_controller, serve, serve_forked


class Command(BaseCommand):
    help = "Receive mail for the help desk over SMTP or LMTP (aiosmtpd)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=2525)
        parser.add_argument("--lmtp", action="store_true", help="speak LMTP (per-recipient replies)")
        parser.add_argument(
            "--workers", type=int, default=0, help="database threads per process (default 4; 1 on SQLite)"
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=0,
            help="listener processes sharing the port (default: one per CPU; 1 on SQLite)",
        )

    def handle(self, *args, host, port, lmtp, workers, processes, **options):
        sqlite = settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
        workers = workers or (1 if sqlite else 4)
        # a process runs Python on one core at a time (the GIL); SQLite writes one transaction at a time anyway
        processes = processes or (1 if sqlite else os.cpu_count() or 1)
        protocol = "LMTP" if lmtp else "SMTP"
        how = f"{processes} processes x {workers} threads" if processes > 1 else f"{workers} threads"

        def ready():
            self.stdout.write(f"Receiving mail ({protocol}) on {host}:{port} ({how}); Ctrl-C stops.")
            self.stdout.flush()

        if processes == 1:
            serve(make_controller(host=host, port=port, lmtp=lmtp, workers=workers), ready=ready)
            return
        status = serve_forked(
            host=host, port=port, lmtp=lmtp, workers=workers, processes=processes, ready=ready
        )
        if status:
            sys.exit(status)
