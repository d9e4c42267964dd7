"""Concurrent writes of one license that take the same rows in different ways: do any two deadlock?

    createdb -h 127.0.0.1 -U postgres -T <a migrated database, e.g. bench/dataset.py's> helpdesk_lock_stress
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_lock_stress REDIS_URL=redis://127.0.0.1:6379/12 \\
        DEBUG=false SECRET_KEY=bench-only .venv/bin/python bench/lock_stress.py --seconds 30

A fresh license whose owner is autoassigned in a team, and an event rule that puts every new ticket in that
team and autoassigns it (`assignTeam`, `autoassign`). For `--seconds`, `--mailers` threads deliver new mail
(`inbound_message_receive`: the number taken before the transaction, the rule's autoassignment locking the team
in the before-commit stage, the rollups and the acknowledgement's confirmation at the end) while `--creators`
threads create tickets in the team (`ticket_create`: the team locked by the create's own autoassignment). Each
thread counts its writes and its errors by kind; a deadlock is PostgreSQL's `deadlock detected`.

Run by hand (not part of the tests, whose lock-order tests are deterministic: tests/test_autoassignment.py,
tests/test_lock_order.py); bench/README.md has the results. The rows it writes stay in the database.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
import time
from email.message import EmailMessage
from email.utils import make_msgid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
os.environ.setdefault("DEBUG", "false")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from accounts import services as account_services  # noqa: E402
from accounts.models import Agent, AutoassignmentMembership, Team  # noqa: E402
from helpdesk.context import SYSTEM, acting_as  # noqa: E402
from templates_app.addresses import license_address  # noqa: E402
from templates_app.inbound.services import inbound_message_receive  # noqa: E402
from tickets import services as ticket_services  # noqa: E402
from tickets.rules import services as rules  # noqa: E402


def _license():
    license = account_services.license_create(owner_email=f"lock-stress-{time.time_ns()}@example.com")
    owner = Agent.objects.filter(license=license).first()
    team = Team.objects.create(license=license, name="Routed")
    Agent.objects.filter(pk=owner.pk).update(autoassignment=True)
    AutoassignmentMembership.objects.create(agent=owner, team=team)
    rules.rule_create(
        license=license,
        name="Route new tickets",
        triggers=[{"type": "event", "op": "is", "value": "created"}],
        actions=[{"type": "assignTeam", "value": str(team.pk)}, {"type": "autoassign", "value": None}],
    )
    return license, team


def _mail(address: str, n: int, i: int) -> bytes:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = f"c{n}-{i}@d{n}-{i}.example", address, f"Mail {n}-{i}"
    mail["Message-ID"] = make_msgid(domain="lock-stress.example")
    mail.set_content("Hello")
    return mail.as_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--mailers", type=int, default=4)
    parser.add_argument("--creators", type=int, default=4)
    args = parser.parse_args()
    license, team = _license()
    address = license_address(license.pk)
    done, errors = collections.Counter(), collections.Counter()
    stop = time.monotonic() + args.seconds

    def run(kind, write):
        i = 0
        try:
            while time.monotonic() < stop:
                i += 1
                try:
                    write(i)
                    done[kind] += 1
                except Exception as exc:  # counted by kind: what this bench is for
                    errors[f"{kind}: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"] += 1
        finally:
            connection.close()

    def mailer(n):
        run("mail", lambda i: inbound_message_receive(raw=_mail(address, n, i), recipients=[address]))

    def create(i):
        with acting_as(SYSTEM):
            ticket_services.ticket_create(
                license=license, subject=f"API {i}", requester={"email": "api@example.com"},
                message={"text": "Hello"}, teams=[team],
            )  # fmt: skip

    threads = [threading.Thread(target=mailer, args=(n,)) for n in range(args.mailers)]
    threads += [threading.Thread(target=run, args=("create", create)) for _ in range(args.creators)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"{args.seconds:.0f} s: " + ", ".join(f"{count} {kind}s" for kind, count in sorted(done.items())))
    for error, count in sorted(errors.items()):
        print(f"  {count} × {error}")
    if not errors:
        print("  no error")


if __name__ == "__main__":
    main()
