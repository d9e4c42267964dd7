"""The agent's console pages on the 1M-ticket dataset: a normal agent of the largest license opens its ticket
list (My open tickets, every ticket, each of its views, with the sidebar's exact counts) and a ticket page.

Run against a COPY of the benchmark database (it saves views and a session):
    createdb -T helpdesk_bench helpdesk_bench_<you>
    DATABASE_URL=postgres://.../helpdesk_bench_<you> .venv/bin/python bench/console_pages.py [--runs 5]
Prints, per page, the median and worst wall time over the runs (the first run, with cold caches, apart) and the
number of SQL statements (bench/README.md, "The agent's console").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.db.models import Count
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.models import Agent, License
    from tickets.models import Ticket
    from tickets.saved_views.models import View
    from tickets.saved_views.services import view_create

    license = License.objects.annotate(n=Count("tickets")).order_by("-n").first()
    busiest = (
        Ticket.objects.filter(license=license, status="open", assignment_agent__isnull=False)
        .values("assignment_agent").annotate(n=Count("id")).order_by("-n").first()
    )  # fmt: skip
    agent = Agent.objects.get(pk=busiest["assignment_agent"])
    if "normal" not in agent.roles or "owner" in agent.roles:
        Agent.objects.filter(pk=agent.pk).update(roles=["normal"])
        agent.refresh_from_db()
    team = license.default_team_id
    View.objects.filter(license=license, name__startswith="console: ").delete()
    filters = [{"status": "open"}, {"status": "pending"}, {"teamIDs[]": [str(team)]}, {"priority": "20"}, {}]
    views = [
        view_create(license=license, author=None, name=f"console: {i}", filters=f)
        for i, f in enumerate(filters)
    ]
    views.append(
        view_create(
            license=license, author=agent, agent_id=agent.pk, name="console: mine", filters={"hasTags": "N"}
        )
    )
    ticket = Ticket.objects.filter(license=license).order_by("-last_message_at").first()
    client = Client(HTTP_USER_AGENT="bench-console/1.0")
    client.force_login(agent.account)
    base = "/admin/tickets/ticket/"
    pages = {"list: My open tickets": base, "list: all tickets": f"{base}?view=all"}
    pages |= {f"list: view {v.name[9:]}": f"{base}?view={v.pk}" for v in views}
    pages["ticket page"] = f"{base}{ticket.pk}/change/"
    print(f"license {license.pk} ({license.n} tickets), agent {agent.email}, {args.runs} runs")
    for name, url in pages.items():
        times, statements = [], 0
        for run in range(args.runs + 1):
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                response = client.get(url)
                elapsed = time.perf_counter() - start
            assert response.status_code == 200, (url, response.status_code)
            statements = len(queries)
            if run:
                times.append(elapsed * 1000)
        print(
            f"{name:32} median {statistics.median(times):7.0f} ms  worst {max(times):7.0f} ms  {statements} SQL"
        )


if __name__ == "__main__":
    main()
