"""Reports benchmark: the reports' own time (in process, the view's code without HTTP and authentication) on a
license of N tickets with their metrics, and what the metrics cost a ticket write.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_reports DB_STATEMENT_TIMEOUT_MS=0 \\
        .venv/bin/python bench/reports.py --tickets 1000000 --rebuild --runs 20 [--filtered] [--reports a,b]

(the seed's statements outlast the default 30 s statement timeout at 1M tickets.)

Seeds once (PostgreSQL: INSERT ... SELECT generate_series, a year of tickets spread evenly whatever --tickets,
70% answered within 2 hours, 60% solved within a day, 30% rated, 5 teams and 20 agents; the seconds scattered
(number x 7919 mod the limit) so that every day holds responses and resolutions of every length; two tickets in
three as if under an SLA policy, their business seconds 0.3 x the calendar's), then prints
p50/p95 (ms) of every report over the last 30 and 365 days, and the statements one reply-and-solve write runs
with and without the metrics' receiver.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.http import QueryDict  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts.models import License  # noqa: E402

COMPANY = "Reports bench"


def seed(n: int) -> License:
    from accounts import services as accounts_services
    from tests.factories import AgentFactory, TeamFactory

    license = License.objects.filter(settings__companyName=COMPANY).order_by("pk").first()
    if license is not None and license.tickets.count() >= n:
        return license
    if license is None:
        license = accounts_services.license_create(
            owner_email="reports-bench@example.com", company_name=COMPANY
        )
    teams = [TeamFactory(license=license, name=f"Bench team {i}") for i in range(5)]
    agents = [AgentFactory(license=license) for _ in range(20)]
    team_ids = "ARRAY[" + ",".join(f"'{t.pk}'::uuid" for t in teams) + "]"
    agent_ids = "ARRAY[" + ",".join(f"'{a.pk}'::uuid" for a in agents) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO tickets_ticket (id, license_id, number, short_id, status, priority, silo, subject,
                requester_email, requester_name, people_in_the_loop, assignment_team_id, assignment_agent_id,
                custom_fields, rating_requeest_sent, rating_score, rating_comment, rated_at, language,
                status_changed_at, last_message_at, search_text, created_at, created_by_type, updated_at, sla_breached)
            SELECT gen_random_uuid(), %(lic)s, g, g::text,
                (ARRAY['open','pending','solved','closed','solved'])[1 + g %% 5], 0, 'tickets', 'Bench ' || g,
                'c' || g || '@example.com', '', '[]', ({team_ids})[1 + g %% 5], ({agent_ids})[1 + g %% 20],
                '{{}}', false,
                CASE WHEN g %% 10 < 3 THEN (ARRAY['good','bad','good'])[1 + g %% 3] ELSE '' END, '',
                CASE WHEN g %% 10 < 3 THEN now() - (g * interval '1 second' * %(step)s) + interval '5 hours' END,
                'none', now() - (g * interval '1 second' * %(step)s), now() - (g * interval '1 second' * %(step)s), '',
                now() - (g * interval '1 second' * %(step)s), 'system', now() - (g * interval '1 second' * %(step)s), false
            FROM generate_series(1, %(n)s) AS g
            """,
            {"lic": license.pk, "n": n, "step": 31_000_000 // n},  # a year whatever n (1M: 31 s apart)
        )
        cursor.execute(
            f"""
            INSERT INTO tickets_ticketmetrics (ticket_id, license_id, source, first_client_message_at,
                first_response_at, first_response_seconds, first_response_agent_id, first_response_team_id,
                cycle_started_at, silo, created_at, first_response_business_seconds)
            SELECT id, license_id, (ARRAY['email','api','email','admin'])[1 + number %% 4], created_at,
                CASE WHEN number %% 10 < 7 THEN created_at + (number * 7919 %% 7200) * interval '1 second' END,
                CASE WHEN number %% 10 < 7 THEN (number * 7919 %% 7200)::float END,
                CASE WHEN number %% 10 < 7 THEN ({agent_ids})[1 + number %% 20] END,
                CASE WHEN number %% 10 < 7 THEN ({team_ids})[1 + number %% 5] END, NULL, silo, created_at,
                CASE WHEN number %% 10 < 7 AND number %% 3 < 2 THEN (number * 7919 %% 7200) * 0.3 END
            FROM tickets_ticket WHERE license_id = %(lic)s
            """,
            {"lic": license.pk},
        )
        cursor.execute(
            """
            INSERT INTO tickets_ticketresolution (ticket_id, license_id, started_at, solved_at, seconds, agent_id,
                team_id, silo, business_seconds)
            SELECT id, license_id, created_at, created_at + (number * 7919 %% 86400) * interval '1 second',
                (number * 7919 %% 86400)::float, assignment_agent_id, assignment_team_id, silo,
                CASE WHEN number %% 3 < 2 THEN (number * 7919 %% 86400) * 0.3 END
            FROM tickets_ticket WHERE license_id = %(lic)s AND number %% 10 < 6
            """,
            {"lic": license.pk},
        )
        cursor.execute(
            "INSERT INTO tickets_ticket_teams (ticket_id, team_id, license_id, silo, status) "
            "SELECT id, assignment_team_id, license_id, silo, status FROM tickets_ticket WHERE license_id = %s",
            [license.pk],
        )
        cursor.execute("ANALYZE")
    return license


def _timed(name: str, params: dict, lists: dict, license: License, runs: int) -> tuple[float, float]:
    from tickets.reports.api import report_document

    data = QueryDict(mutable=True)
    data.update(params)
    for key, values in lists.items():
        data.setlist(key, values)
    report_document(name, data, license)  # warm
    spent = []
    for _ in range(runs):
        started = time.perf_counter()
        report_document(name, data, license)
        spent.append((time.perf_counter() - started) * 1000)
    spent.sort()
    return statistics.median(spent), spent[max(0, int(len(spent) * 0.95) - 1)]


# Filtered reports: (report, filter) timed by --filtered
FILTERED = [
    ("newTickets", "teamIDs[]"), ("newTickets", "agentIDs[]"), ("newTickets24", "agentIDs[]"),
    ("status", "agentIDs[]"), ("statusPerAgent", "agentIDs[]"), ("rating", "agentIDs[]"),
    ("ratingPerAgent", "agentIDs[]"), ("responseTime", "agentIDs[]"), ("resolutionTime", "teamIDs[]"),
    ("newTickets24", "teamIDs[]"), ("status", "teamIDs[]"), ("rating", "teamIDs[]"), ("ticketSources24", "teamIDs[]"),
    ("responseTime", "teamIDs[]"), ("responseTime24", "teamIDs[]"), ("resolutionTime24", "teamIDs[]"),
    ("resolutionTime", "agentIDs[]"), ("responseTime24", "agentIDs[]"), ("resolutionTime24", "agentIDs[]"),
    ("newTickets", "teamIDs[] x2"),
]  # fmt: skip


def time_reports(license: License, runs: int, names: list[str], filtered: bool, clock: str = "") -> None:
    from tickets.reports import api  # noqa: F401  (declares the reports)
    from tickets.reports.registry import REPORTS

    team = license.teams.order_by("pk").first()
    agent = license.agents.order_by("pk").first()
    print(f"{'report':40} {'30 days p50':>12} {'p95':>8} {'365 days p50':>13} {'p95':>8}   (ms)")
    cases = [(name, "") for name in sorted(REPORTS) if not names or name in names]
    if clock:  # the time reports only, in that clock
        cases = [(name, by) for name, by in cases if REPORTS[name].business_seconds]
    if filtered:
        cases += [case for case in FILTERED if not names or case[0] in names]
    for name, by in cases:
        cells = []
        for days in (30, 365):
            params = {"from": f"-{days - 1}D", "to": "+1D"}  # whole local days (D): the rollups
            if name.startswith("status"):
                params["status"] = "open"
            if clock:
                params["clock"] = clock
            lists = {by: [str(team.pk if by == "teamIDs[]" else agent.pk)]} if by else {}
            if by == "teamIDs[] x2":  # two teams: tickets visible to either
                lists = {
                    "teamIDs[]": [
                        str(pk) for pk in license.teams.order_by("pk").values_list("pk", flat=True)[:2]
                    ]
                }
            cells += _timed(name, params, lists, license, runs)
        label = (
            (f"{name} ({by[:-2]}: one)" if by != "teamIDs[] x2" else f"{name} (teamIDs: two)") if by else name
        )
        print(f"{label:40} {cells[0]:12.1f} {cells[1]:8.1f} {cells[2]:13.1f} {cells[3]:8.1f}", flush=True)


class Writer(threading.Thread):
    """`rate` writes a second on the seeded license through the services (each its own transaction, as the
    API's): a new ticket from a client, an agent's reply, a solve, a reassignment or a change of its teams (after
    its solve: its resolution's rows move to the new assignee's and teams'), in turn."""

    def __init__(self, license: License, rate: float):
        super().__init__(daemon=True)
        self.license, self.rate, self.stop, self.done, self.spent = license, rate, threading.Event(), 0, []

    def run(self):
        from django.db import connection as own
        from django.db.models import Max

        from helpdesk.context import SYSTEM, acting_as
        from tickets import services
        from tickets.models import TicketSequence

        # the seeded tickets took their numbers without the license's sequence: start the writer's after them
        last = self.license.tickets.aggregate(n=Max("number"))["n"] or 0
        TicketSequence.objects.update_or_create(license=self.license, defaults={"last_number": last})
        agents, teams = list(self.license.agents.all()), list(self.license.teams.all())
        rng, made = random.Random(33), []
        next_at = time.perf_counter()
        with acting_as(SYSTEM):
            while not self.stop.is_set():
                started = time.perf_counter()
                kind = self.done % 5
                if kind == 0 or not made:
                    made.append(services.ticket_create(
                        license=self.license, subject="writer", requester={"email": "w@example.com"},
                        message={"text": "hi"}, author_type="client",
                    ))  # fmt: skip
                elif kind == 1:
                    services.ticket_update(
                        ticket=made[-1], author_agent=rng.choice(agents), message={"text": "a"}
                    )
                elif kind == 2:
                    services.ticket_update(ticket=made[-1], status="solved", force=True)
                elif kind == 3:
                    services.ticket_update(ticket=made[-1], assignment={"agent": rng.choice(agents)})
                else:
                    services.ticket_update(ticket=made[-1], teams=rng.sample(teams, 2))
                self.spent.append((time.perf_counter() - started) * 1000)
                self.done += 1
                next_at += 1 / self.rate
                time.sleep(max(0.0, next_at - time.perf_counter()))
        own.close()


def _cost_license(sla: bool) -> License:
    """The write cost's license (the seeded license's tickets took no numbers from its sequence: another one);
    `sla`: another, whose tickets are all under a policy in Mon-Fri 09:00-17:00 Europe/Warsaw business hours
    (their first responses and resolutions are also counted in business seconds)."""
    from accounts import services as accounts_services

    name = "Reports write cost" + (" (SLA)" if sla else "")
    license = License.objects.filter(settings__companyName=name).first()
    if license is None:
        license = accounts_services.license_create(owner_email="reports-cost@example.com", company_name=name)
        if sla:
            from tickets.sla import services as sla_services

            week = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
            hours = sla_services.business_hours_create(
                license=license, name="Office", timezone="Europe/Warsaw", week=week
            )
            sla_services.sla_policy_create(
                license=license, name="Office", business_hours_id=hours.pk,
                targets={"0": {"firstResponseMinutes": 60, "resolutionMinutes": 480}},
            )  # fmt: skip
    return license


def write_cost(sla: bool = False) -> None:
    from helpdesk.context import SYSTEM, acting_as
    from tickets import services
    from tickets.reports import wiring
    from tickets.signals import events_recorded

    license = _cost_license(sla)
    agent = license.agents.order_by("created_at").first()
    team = license.teams.exclude(pk=license.default_team_id).first()
    if team is None:  # one other than the default team, which every new ticket is visible to
        from tests.factories import TeamFactory

        team = TeamFactory(license=license, name="Cost team")
    for receiver in (True, False):
        if not receiver:
            events_recorded.disconnect(dispatch_uid="tickets.reports.metrics")
        with acting_as(SYSTEM):
            ticket = services.ticket_create(
                license=license, subject="cost", requester={"email": "x@example.com"}, message={"text": "hi"},
                author_type="client",
            )  # fmt: skip
            with CaptureQueriesContext(connection) as reply:
                services.ticket_update(ticket=ticket, author_agent=agent, message={"text": "answer"})
            with CaptureQueriesContext(connection) as solve:
                services.ticket_update(ticket=ticket, status="solved", force=True)
            with CaptureQueriesContext(connection) as assign:  # after the solve: its resolution's rows follow
                services.ticket_update(ticket=ticket, assignment={"agent": agent})
            with CaptureQueriesContext(connection) as teams:
                services.ticket_update(ticket=ticket, teams=[team])
            fresh = services.ticket_create(
                license=license, subject="cost", requester={"email": "x@example.com"}, message={"text": "hi"},
                author_type="client",
            )  # fmt: skip
            with CaptureQueriesContext(connection) as assign_new:  # never solved: nothing to re-count
                services.ticket_update(ticket=fresh, assignment={"agent": agent})
        print(
            f"metrics {'on ' if receiver else 'off'}: reply {len(reply)} statements, solve {len(solve)}, "
            f"assignment {len(assign_new)} (after a solve {len(assign)}), teams after a solve {len(teams)}"
        )
    events_recorded.connect(wiring.on_events_recorded, dispatch_uid="tickets.reports.metrics")


def cost_loop(writes: int, receiver: bool, sla: bool = False) -> None:
    """`writes` times: a new ticket, an agent's reply and a solve (3 writes), with or without the receiver
    that keeps the metrics and the rollups; run under callgrind by `--instructions`."""
    from helpdesk.context import SYSTEM, acting_as
    from tickets import services
    from tickets.signals import events_recorded

    license = _cost_license(sla)
    agent = license.agents.order_by("created_at").first()
    if not receiver:
        events_recorded.disconnect(dispatch_uid="tickets.reports.metrics")
    with acting_as(SYSTEM):
        for _ in range(writes):
            ticket = services.ticket_create(
                license=license, subject="cost", requester={"email": "x@example.com"}, message={"text": "hi"},
                author_type="client",
            )  # fmt: skip
            services.ticket_update(ticket=ticket, author_agent=agent, message={"text": "answer"})
            services.ticket_update(ticket=ticket, status="solved", force=True)


def _callgrind(writes: int, receiver: bool, sla: bool = False) -> int:
    command = [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
        os.path.abspath(__file__), "--cost-loop", str(writes), "--receiver", "on" if receiver else "off",
        *(["--sla"] if sla else []),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode or not found:
        raise SystemExit(f"callgrind failed:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def instructions(writes: int, sla: bool = False) -> None:
    """Instructions per write (a create, a reply, a solve: their mean) with and without the receiver."""
    for receiver in (True, False):
        spent = (_callgrind(writes, receiver, sla) - _callgrind(0, receiver, sla)) / (3 * writes)
        print(
            f"receiver {'on ' if receiver else 'off'}: {spent / 1e6:.2f} M instructions per write", flush=True
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tickets", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cost-only", action="store_true", help="only the statements a write costs")
    parser.add_argument("--writer", type=float, default=0, help="writes/s on the license while timing")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the license's rollups after seeding")
    parser.add_argument(
        "--instructions", type=int, default=0, help="instructions per write over N x 3 writes"
    )
    parser.add_argument("--write-for", type=float, default=0, help="only write (--writer/s) for N seconds")
    parser.add_argument("--reports", default="", help="only these reports (comma-separated names)")
    parser.add_argument("--filtered", action="store_true", help="also time reports with one team or agent")
    parser.add_argument("--no-cost", action="store_true", help="skip the statements a write costs")
    parser.add_argument("--cost-loop", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--receiver", default="on", help=argparse.SUPPRESS)
    parser.add_argument("--sla", action="store_true", help="the write cost of tickets under an SLA policy")
    parser.add_argument("--clock", default="", help="only the time reports, with this clock (business)")
    args = parser.parse_args()
    if args.cost_loop >= 0:
        cost_loop(args.cost_loop, args.receiver == "on", args.sla)
        return
    if args.instructions:
        instructions(args.instructions, args.sla)
        return
    if args.write_for:  # the writer as a process of its own (in the timing process it would share its GIL)
        writer = Writer(
            License.objects.filter(settings__companyName=COMPANY).order_by("pk").first(), args.writer
        )
        threading.Timer(args.write_for, writer.stop.set).start()
        writer.run()
        spent = sorted(writer.spent)
        print(f"writer: {writer.done} writes in {args.write_for:.0f} s, p50 {statistics.median(spent):.0f} ms, "
              f"p95 {spent[int(len(spent) * 0.95) - 1]:.0f} ms")  # fmt: skip
        return
    if args.cost_only:
        write_cost(args.sla)
        return
    started = time.perf_counter()
    license = seed(args.tickets)
    print(
        f"license {license.pk}: {license.tickets.count()} tickets (seeded in {time.perf_counter() - started:.0f} s)"
    )
    if args.rebuild:
        from tickets.reports import rollups

        started = time.perf_counter()
        print(
            f"rollups: {rollups.rebuild(license.pk)} rows in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        with (
            connection.cursor() as cursor
        ):  # the visibility map and the statistics autovacuum would set later
            cursor.execute("VACUUM ANALYZE tickets_reportrollup")
    writer = None
    if args.writer:
        writer = Writer(license, args.writer)
        writer.start()
    time_reports(license, args.runs, [n for n in args.reports.split(",") if n], args.filtered, args.clock)
    if writer is not None:
        writer.stop.set()
        writer.join()
        spent = sorted(writer.spent)
        print(f"writer: {writer.done} writes, p50 {statistics.median(spent):.0f} ms, "
              f"p95 {spent[int(len(spent) * 0.95) - 1]:.0f} ms")  # fmt: skip
    if not args.no_cost:
        write_cost(args.sla)


if __name__ == "__main__":
    main()
