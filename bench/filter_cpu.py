"""CPU of the ticket search's filter step alone, without the request around it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench DEBUG=false SECRET_KEY=bench-only \\
        LOG_LEVEL=WARNING .venv/bin/python bench/filter_cpu.py [--iterations 2000]

Per query class (largest license of bench/credentials.json): the parameters checked, the TicketFilterSet built
and validated, the pagination parameters parsed, the filtered query compiled twice (the count's cache key and
the page's keys), as `tickets.selectors.ticket_search` does, and nothing sent to the database. This is the part
of a request that the FilterSet's shared copies and forms (tickets/filters.py, helpdesk/api/forms.py) and the
`Linked` expression make cheaper: to measure one of them, run this in a copy of the tree with it removed and in
the tree itself, alternately (bench/README.md, session 6). bench/cpu.py measures the whole request.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--credentials", default=os.path.join(os.path.dirname(__file__), "credentials.json"))
    args = parser.parse_args()

    import django

    django.setup()
    from django.http import QueryDict

    from accounts.models import License, Team
    from helpdesk.api.pagination import PAGINATION_PARAMS, KeysetPagination
    from tickets.filters import TicketFilterSet
    from tickets.models import Tag, Ticket
    from tickets.selectors import SORT_FIELDS

    with open(args.credentials) as handle:
        big = max(json.load(handle), key=lambda c: c["tickets"])
    license = License.objects.get(pk=big["licenseID"])
    tags = [str(pk) for pk in Tag.objects.filter(license=license).values_list("pk", flat=True)[:2]]
    team = str(Team.objects.filter(license=license).values_list("pk", flat=True).first())
    classes = {
        "inbox": "status=open&sortBy=lastMessageAt",
        "tags_none": "hasTags=N",
        "tags": "&".join(f"tagIDs[]={tag}" for tag in tags),
        "team": f"teamIDs[]={team}",
    }

    def filter_step(query: str) -> None:
        params = TicketFilterSet.check_params(QueryDict(query), frozenset(PAGINATION_PARAMS))
        filterset = TicketFilterSet(params, Ticket.objects.for_license(license), license=license)
        assert filterset.is_valid(), filterset.errors
        KeysetPagination(sort_fields=SORT_FIELDS).parse(params)
        tickets = filterset.qs
        tickets.values("pk").query.sql_with_params()
        tickets.order_by("-created_at", "-pk").values_list("id", "created_at")[:21].query.sql_with_params()

    print(f"{'class':<12} {'CPU ms/filter step':>18}")
    for name, query in classes.items():
        for _ in range(200):
            filter_step(query)
        cpu = time.process_time()
        for _ in range(args.iterations):
            filter_step(query)
        print(f"{name:<12} {(time.process_time() - cpu) * 1000 / args.iterations:>18.3f}")


if __name__ == "__main__":
    main()
