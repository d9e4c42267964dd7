"""The time sweep (tickets/rules/sweep.py) at scale: one run with 20 time rules, and how it grows with the tickets
that came due since the last run.

    createdb -h 127.0.0.1 -U postgres -T helpdesk_bench helpdesk_bench_copy     # never on the bench DB itself
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench_copy REDIS_URL=redis://127.0.0.1:6379/12 \\
        CACHE_KEY_PREFIX=bench DEBUG=false SECRET_KEY=bench-only HELPDESK_VAR_DIR=/tmp/bench-var
    .venv/bin/python manage.py migrate
    .venv/bin/python bench/rules_sweep.py [--windows 60,3600,86400,604800] [--steady-only]
    dropdb -h 127.0.0.1 -U postgres helpdesk_bench_copy

It gives the largest license (bench/dataset.py: 300,000 of the 1M tickets) 20 time rules, driven by the six time
fields in turn (`hoursSince` gt 24 to 480 hours) and holding only on `pending` tickets (the others are read and
not changed: the cost of reading what came due is measured, and the firings' ticket writes too). For each window
W it sets every rule's `swept_until` to now - W (the previous run was W ago) and times one `run_time_rules`:
W = 60 s is the steady state of beat's minute; larger windows are runs after an outage. Printed: wall ms per run,
SQL statements, tickets due (read), firings, and the slowest statement (its plan shows whether an index range or
a scan found the due tickets).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.db.models import Count  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts.models import License  # noqa: E402
from helpdesk.context import SCHEDULED_TASK, Actor, acting_as  # noqa: E402
from tickets.models import Ticket  # noqa: E402
from tickets.rules import services, sweep  # noqa: E402
from tickets.rules.conditions import TIME_FIELDS  # noqa: E402
from tickets.rules.models import Rule  # noqa: E402

NAME = "bench sweep"


class _Statements:
    def __init__(self):
        self.count, self.slowest, self.all = 0, (0.0, ""), []

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent = time.perf_counter() - started
            self.count += 1
            self.all.append((spent, sql))
            if spent > self.slowest[0]:
                self.slowest = (spent, sql)


def _rules(license: License) -> list[Rule]:
    rules = list(Rule.objects.filter(license=license, name__startswith=NAME).order_by("ordering"))
    fields = list(TIME_FIELDS)
    with acting_as(Actor(type=SCHEDULED_TASK)):
        for n in range(len(rules), 20):
            rules.append(
                services.rule_create(
                    license=license,
                    name=f"{NAME} {n}",
                    ordering=n,
                    triggers=[
                        {
                            "type": "hoursSince",
                            "op": "gt",
                            "value": 24 * (1 + n),
                            "field": fields[n % len(fields)],
                        },
                        {"type": "status", "op": "is", "value": "pending"},
                    ],
                    actions=[{"type": "setPriority", "value": 10}],
                )
            )
    return rules


def _due(rules: list[Rule], now, window: timedelta) -> int:
    total = 0
    for rule in rules:
        condition = sweep.driver(rule)
        hours = timedelta(hours=condition["value"])
        total += sweep._slice(
            rule, TIME_FIELDS[condition["field"]], now - window - hours, now - hours
        ).count()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--windows", default="60,3600,86400,604800", help="seconds since the previous run")
    parser.add_argument(
        "--top", type=int, default=0, help="the N statements that took the most time, per run"
    )
    args = parser.parse_args()
    license_id = Ticket.objects.values("license_id").annotate(n=Count("id")).order_by("-n")[0]["license_id"]
    license = License.objects.get(pk=license_id)
    rules = _rules(license)
    # the other licenses' time rules (none in the bench data) would run too: only ours are active
    others = Rule.objects.filter(is_time_rule=True, active=True).exclude(pk__in=[r.pk for r in rules]).count()
    print(
        f"license {license_id}: {Ticket.objects.filter(license=license).count()} tickets, 20 time rules "
        f"(+{others} other active time rules)"
    )
    print(f"{'window':>10} {'ms/run':>9} {'statements':>10} {'due':>7} {'fired':>6}  slowest statement")
    for seconds in map(int, args.windows.split(",")):
        now, window = timezone.now(), timedelta(seconds=seconds)
        Rule.objects.filter(pk__in=[r.pk for r in rules]).update(swept_until=now - window)
        due = _due(rules, now, window)
        counter = _Statements()
        with connection.execute_wrapper(counter):
            started = time.perf_counter()
            fired = sweep.run_time_rules(now=now)
            spent = (time.perf_counter() - started) * 1000
        slow_ms, slow_sql = counter.slowest
        print(
            f"{seconds:>9}s {spent:>9.1f} {counter.count:>10} {due:>7} {fired:>6}  {slow_ms * 1000:.1f} ms: "
            f"{' '.join(slow_sql.split())[:150]}",
            flush=True,
        )
        if args.top:
            by_kind: dict = {}
            for spent_one, sql in counter.all:
                key = " ".join(sql.split())[:110]
                total, n = by_kind.get(key, (0.0, 0))
                by_kind[key] = (total + spent_one, n + 1)
            for key, (total, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0])[: args.top]:
                print(f"    {total * 1000:9.1f} ms {n:6}x  {key}")


if __name__ == "__main__":
    main()
