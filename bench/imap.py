"""IMAP polling throughput: messages per second fetched from a Dovecot mailbox and stored as tickets.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_imap .venv/bin/python bench/imap.py --messages 2000

Starts Debian's Dovecot with the tests' throwaway configuration (tests/dovecot.py; `apt-get install
dovecot-imapd`), appends `--messages` messages (~1.5 KB, multipart/alternative, each a new conversation: the
expensive case) to one account, creates a fresh license with a mailbox polling it (STARTTLS, certificate
verified), then times:
1. the IMAP side alone: the same UID SEARCH / RFC822.SIZE / BODY.PEEK[] fetches the poller makes, nothing stored;
2. the polls that read the mailbox (templates_app.inbound.imap.mailbox_poll, one poll after another, each
   bounded by IMAP_MAX_MESSAGES_PER_POLL) until nothing is left: every message a ticket;
3. the same folder read again after the UID state is lost: every message found already stored (Message-ID);
4. a poll with nothing new (the cost of a quiet mailbox, every minute).
Run by hand (not part of the tests); see bench/README.md for results.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from email.message import EmailMessage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 50)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from accounts import services as account_services  # noqa: E402
from templates_app.inbound import imap  # noqa: E402
from templates_app.mailboxes import mailbox_create  # noqa: E402
from templates_app.models import MailboxState  # noqa: E402
from tests.dovecot import Dovecot  # noqa: E402
from tickets.models import Ticket  # noqa: E402

WORDS = [
    "order",
    "invoice",
    "printer",
    "password",
    "login",
    "refund",
    "delivery",
    "account",
    "portal",
    "error",
]


def message(number: int, run: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Customer {number} <customer{number % 50}@example.com>"
    msg["To"] = "support@acme.example"
    msg["Subject"] = f"{run} request {number}: {WORDS[number % len(WORDS)]}"
    msg["Message-ID"] = f"<{run}.{number}@bench.example>"
    body = " ".join(WORDS[(number + i) % len(WORDS)] for i in range(60))
    msg.set_content(f"Hello,\n\n{body}\n\nThanks,\nCustomer {number}\n")
    msg.add_alternative(f"<p>Hello,</p><p>{body}</p><p>Thanks,<br>Customer {number}</p>", subtype="html")
    return msg.as_bytes()


def fetch_only(mailbox) -> tuple[int, float]:
    started = time.perf_counter()
    client = imap.connect(mailbox)
    try:
        imap._open_folder(client, mailbox)
        uids = imap._new_uids(client, 0)
        imap._sizes(client, uids)
        total = sum(len(imap._message(client, uid) or b"") for uid in uids)
    finally:
        client.logout()
    return len(uids), time.perf_counter() - started, total


def poll_all(mailbox) -> tuple[int, int, float]:
    started, polls, stored = time.perf_counter(), 0, 0
    while True:
        result = imap.mailbox_poll(mailbox_id=mailbox.pk)
        polls += 1
        assert result is not None and not result.error, result
        stored += result.stored
        if not result.more:
            return stored, polls, time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--per-poll", type=int, default=settings.IMAP_MAX_MESSAGES_PER_POLL)
    args = parser.parse_args()
    settings.IMAP_MAX_MESSAGES_PER_POLL = args.per_poll
    settings.IMAP_POLL_MAX_SECONDS = 3600
    server = Dovecot()
    try:
        settings.IMAP_CA_FILE = str(server.cert)
        run = f"imap{time.time_ns()}"
        server.add_user("bench", "bench")
        started = time.perf_counter()
        server.deliver("bench", *(message(n, run) for n in range(args.messages)))
        print(f"{args.messages} messages appended in {time.perf_counter() - started:.1f} s")
        license = account_services.license_create(owner_email=f"bench-imap-{time.time_ns()}@example.com")
        mailbox = mailbox_create(
            license=license,
            name="Support",
            email="support@acme.example",
            imap={"host": "127.0.0.1", "port": server.port, "security": "starttls", "username": "bench",
                  "password": "bench"},
        )  # fmt: skip
        print(
            f"license {license.pk}, {os.cpu_count()} CPUs, per poll {args.per_poll}, "
            f"load average {' '.join(f'{n:.1f}' for n in os.getloadavg())}"
        )
        count, seconds, size = fetch_only(mailbox)
        print(f"1. IMAP fetch only: {count} messages ({size / count:.0f} B each) in {seconds:.2f} s: "
              f"{count / seconds:.0f} messages/s")  # fmt: skip
        stored, polls, seconds = poll_all(mailbox)
        tickets = Ticket.objects.filter(license=license).count()
        print(f"2. polls storing: {stored} messages in {polls} polls, {seconds:.1f} s: {stored / seconds:.1f} "
              f"messages/s ({tickets} tickets)")  # fmt: skip
        MailboxState.objects.filter(pk=mailbox.pk).update(uid_validity=None, last_uid=0)
        again, polls, seconds = poll_all(mailbox)
        assert Ticket.objects.filter(license=license).count() == tickets
        print(
            f"3. read again, all duplicates: {again} messages in {seconds:.1f} s: {again / seconds:.1f} messages/s"
        )
        started = time.perf_counter()
        imap.mailbox_poll(mailbox_id=mailbox.pk)
        print(f"4. a poll with nothing new: {(time.perf_counter() - started) * 1000:.0f} ms")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
