"""A ticket write's cost with 0, 20 and 200 active rules: CPU, SQL statements and instructions per write.

    createdb -h 127.0.0.1 -U postgres helpdesk_rules_cost
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_rules_cost REDIS_URL=redis://127.0.0.1:6379/12 \\
        CACHE_KEY_PREFIX=bench DEBUG=false SECRET_KEY=bench-only HELPDESK_VAR_DIR=/tmp/bench-var
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/rules_cost.py --writes 300 [--instructions --writes 50] [--profile 25]

The write is `tickets.services.ticket_update(status=...)` in its own unit of work (what every entrance calls, less
the HTTP layer, which rules do not touch), alternating open/pending on one ticket of a license of its own (made
on first run). The rules are idle: they are evaluated and do not fire. Two sets:

* `matching`: every rule waits for the write's own event (`statusChanged`), then reads the ticket's tags and its
  subject (tests/test_rules.py `_idle_rules`): each rule is evaluated in full, the worst case;
* `mixed`: the rules' `event` conditions spread over the seven event kinds, as a license's rules are: most of
  them wait for an event that this write does not have.

CPU is `time.process_time` per write (waiting for PostgreSQL is not counted), the median of 5 rounds; statements
are counted on one write; `--instructions` counts the interpreter's instructions per write under valgrind's
callgrind (a run of N writes less a run of none, after the same warm-up), a number that does not depend on the box
or its load (bench/cpu.py --instructions).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts.models import License  # noqa: E402
from helpdesk.transactions import unit_of_work  # noqa: E402
from tickets.models import Tag, Ticket  # noqa: E402
from tickets.rules import services as rule_services  # noqa: E402
from tickets.rules.conditions import EVENTS  # noqa: E402
from tickets.rules.models import Rule  # noqa: E402
from tickets.services import ticket_update  # noqa: E402

COMPANY = os.environ.get("RULES_COST_LICENSE", "Rules cost bench")  # two runs side by side: two licenses


def _license() -> tuple[License, Ticket, Tag]:
    license = License.objects.filter(settings__companyName=COMPANY).first()
    if license is None:
        from tests.factories import LicenseFactory, TagFactory, TicketFactory

        license = LicenseFactory(company_name=COMPANY)
        TagFactory(license=license, name="vip")
        TicketFactory(license=license, subject="Order 1234")
    return (
        license,
        Ticket.objects.filter(license=license).first(),
        Tag.objects.filter(license=license).first(),
    )


def _set_rules(license: License, tag: Tag, count: int, kind: str) -> None:
    for rule in Rule.objects.filter(license=license):
        rule_services.rule_delete(rule=rule)
    for n in range(count):
        event = "statusChanged" if kind == "matching" else EVENTS[n % len(EVENTS)]
        rule_services.rule_create(
            license=license,
            name=f"idle {n}",
            triggers=[
                {"type": "event", "op": "is", "value": event},
                {"type": "tagIDs", "op": "contains", "value": [str(tag.pk)]},
                {"type": "subject", "op": "contains", "value": f"nothing like {n}"},
            ],
            actions=[{"type": "setPriority", "value": 20}],
            ordering=n,
        )


def _writes(ticket: Ticket, count: int) -> None:
    for n in range(count):
        with unit_of_work():
            ticket_update(ticket=ticket, status="pending" if n % 2 == 0 else "open")


def _statements(ticket: Ticket) -> int:
    with CaptureQueriesContext(connection) as queries:
        _writes(ticket, 1)
    return len(queries)


def _cpu_ms(ticket: Ticket, writes: int) -> float:
    rounds = []
    for _ in range(5):
        started = time.process_time()
        _writes(ticket, writes)
        rounds.append((time.process_time() - started) * 1000 / writes)
    return statistics.median(rounds)


def _callgrind(count_only: str) -> int:
    command = [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, os.path.abspath(__file__), "--count-only", count_only,
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode or not found:
        raise SystemExit(f"callgrind failed ({count_only}):\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--rules", default="0,20,200")
    parser.add_argument("--kinds", default="matching,mixed")
    parser.add_argument("--instructions", action="store_true", help="instructions per write, under callgrind")
    parser.add_argument("--profile", type=int, default=0, help="the top N functions of 200 matching rules")
    parser.add_argument("--count-only", help=argparse.SUPPRESS)  # N: the run under callgrind (rules as set)
    args = parser.parse_args()
    license, ticket, tag = _license()
    if args.count_only is not None:
        _writes(ticket, 20)
        _writes(ticket, int(args.count_only))
        return
    if args.profile:
        import cProfile
        import pstats

        _set_rules(license, tag, 200, "matching")
        _writes(ticket, 20)
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        _writes(ticket, args.writes)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
        return
    header = f"{'rules':<14} {'statements':>10} {'CPU ms/write':>13}"
    print(header + (f" {'instructions/write':>19}" if args.instructions else ""))
    for kind in args.kinds.split(","):
        for count in map(int, args.rules.split(",")):
            if count == 0 and kind != args.kinds.split(",")[0]:
                continue
            _set_rules(license, tag, count, kind)
            _writes(ticket, 20)  # warm
            line = f"{count:>4} {kind:<9} {_statements(ticket):>10} {_cpu_ms(ticket, args.writes):>13.2f}"
            if args.instructions:
                spent = _callgrind(str(args.writes)) - _callgrind("0")
                line += f" {spent / args.writes / 1e6:>17.2f} M"
            print(line, flush=True)
    _set_rules(license, tag, 0, "matching")


if __name__ == "__main__":
    main()
