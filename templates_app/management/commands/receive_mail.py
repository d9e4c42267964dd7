"""One e-mail on stdin into the help desk: the MTA pipe contract (Postfix pipe(8), Exim, procmail, fetchmail).

Exit status (sysexits): 0 stored (also a duplicate or a deliberately dropped loop); 67 EX_NOUSER no license
of ours among the recipients (the MTA bounces it); 65 EX_DATAERR too large (bounced with the reason);
75 EX_TEMPFAIL database trouble or anything unexpected (the MTA keeps the mail and retries; a retry stores
nothing twice). The recipient is `--recipient` (repeatable), else $ORIGINAL_RECIPIENT, else the message's
Delivered-To / X-Original-To / To / Cc headers.
"""

from __future__ import annotations

import logging
import os
import sys

from django.conf import settings
from django.core.management.base import BaseCommand

from templates_app.inbound.services import MessageTooLarge, UnknownRecipient, inbound_message_receive

EX_OK, EX_DATAERR, EX_NOUSER, EX_TEMPFAIL = 0, 65, 67, 75
logger = logging.getLogger("helpdesk.inbound")


class Command(BaseCommand):
    help = (
        "Receive one RFC 5322 message from stdin. Exit status: 0 stored (also a duplicate or a dropped loop), "
        "65 too large (bounced), 67 unknown recipient (bounced), 75 try again later (database trouble)."
    )
    stealth_options = ("stdin",)  # tests hand in a byte stream
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--recipient", action="append", default=[], help="envelope recipient (repeatable)"
        )
        parser.add_argument("--sender", default=None, help="envelope sender (empty for a bounce's <>)")

    def handle(self, *args, recipient, sender, **options):
        stdin = options.get("stdin") or sys.stdin.buffer
        raw = stdin.read(settings.INBOUND_MAX_MESSAGE_BYTES + 1)
        recipients = recipient or [r for r in [os.environ.get("ORIGINAL_RECIPIENT", "")] if r] or None
        if sender is not None:
            sender = sender.strip().strip("<>")
        try:
            result = inbound_message_receive(raw=raw, recipients=recipients, envelope_sender=sender)
        except UnknownRecipient as exc:
            self.stderr.write(str(exc))
            sys.exit(EX_NOUSER)
        except MessageTooLarge as exc:
            self.stderr.write(str(exc))
            sys.exit(EX_DATAERR)
        except Exception:
            logger.exception("receive_mail: temporary failure")
            self.stderr.write("Temporary failure (see the log); the MTA should retry.")
            sys.exit(EX_TEMPFAIL)
        self.stdout.write(
            f"{result.status} {result.kind} ticket={result.ticket_id or '-'} {result.note}".rstrip()
        )
        sys.exit(EX_OK)
