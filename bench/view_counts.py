"""`GET /v1/views/counts` for the owner of the largest license with 20 shared views, against the HTTP API.

Reads bench/credentials.json written by `bench/dataset.py` (see bench/README.md, "Views' counts").
It saves 20 shared views (named `bench: ...`, replacing earlier ones) whose filters are the search classes of
bench/search.py (status, inbox, assignment, tags, priority, custom fields, relative dates, full text), then asks
for their counts `--requests` times at each concurrency, printing p50/p95/p99. With `--writer 5` the writer of
bench/search.py changes the license's tickets meanwhile. At the end, with the writer stopped, every view's
served count is checked against a fresh SQL count of its filters (exact) and against the `X-Total-Results` of
`GET /v1/views/{ID}/tickets`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PREFIX = "bench: "


def _filters(world) -> list[dict]:
    teams, tags, agents = world.teams, world.popular_tags, world.agents
    word = world.rare_words[0]
    return [
        {},
        {"status": "pending"},
        {"status": "solved"},
        {"status": "onhold"},
        {"teamIDs[]": [teams[0]]},
        {"teamIDs[]": [teams[1 % len(teams)]]},
        {"teamIDs[]": [teams[0]], "status": "pending"},
        {"assignment.agentID": "none"},
        {"assignment.agentID": agents[1 % len(agents)]},
        {"assignment.teamID": teams[0], "assignment.agentID": "none"},
        {"tagIDs[]": [tags[0]]},
        {"hasTags": "N"},
        {"priority": "20"},
        {"priority": "10", "priorityOp": "gte"},
        {"customFields.plan": "pro"},
        {"createdDateFrom": "-7D"},
        {"lastMessageFrom": "-1M", "hasAssignee": "N"},
        {"rating": "bad"},
        {"query": word},
        {"query": "refund"},
    ]


def _percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def _save_views(api, world) -> list[dict]:
    _, existing = api.get("/v1/views")
    for view in existing:
        if view["name"].startswith(PREFIX):
            api.call("DELETE", f"/v1/views/{view['ID']}", parse=False, ok=(204,))
    views = []
    for filters in _filters(world):
        name = PREFIX + (json.dumps(filters, sort_keys=True) or "all open")
        _, view = api.call("POST", "/v1/views", {"name": name[:200], "filters": filters}, ok=(201,))
        views.append(view)
    return views


def _check(api, license, views) -> list[str]:
    """Served counts against fresh counts (SQL, no cache) and the views' own X-Total-Results."""
    from accounts.models import License
    from tickets import selectors
    from tickets.saved_views.selectors import filters_query

    mismatches = []
    _, served = api.get("/v1/views/counts")
    served = {c["ID"]: c["count"] for c in served}
    license = License.objects.get(pk=license)
    for view in views:
        filterset, _ = selectors.ticket_filterset(license, filters_query(view["filters"]), check_ids=False)
        fresh = filterset.count_queryset(filterset.qs).count()
        response, _ = api.get(f"/v1/views/{view['ID']}/tickets", {"pageSize": 1})
        header = int(response.getheader("X-Total-Results"))
        if not served[view["ID"]] == fresh == header:
            mismatches.append(f"{view['name']}: served {served[view['ID']]}, fresh {fresh}, header {header}")
    return mismatches


def _timed(api) -> float:
    started = time.perf_counter()
    api.get("/v1/views/counts")
    return (time.perf_counter() - started) * 1000


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", default="http://127.0.0.1:8765")
    parser.add_argument("--credentials", default="bench/credentials.json")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--writer", type=float, default=0, help="writes/s to the largest license (0: none)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
    import django

    django.setup()
    logging.getLogger("helpdesk.request").setLevel(logging.WARNING)
    from search import Api, World, Writer

    with open(args.credentials) as handle:
        world = World(args.base_url, json.load(handle))
    api = Api(args.base_url, world.big)
    views = _save_views(api, world)
    print(f"license {world.big['licenseID']} ({world.big['tickets']} tickets), {len(views)} views")
    writer = None
    if args.writer:
        writer = Writer(world, args.writer, args.seed)
        writer.start()
    try:
        for level in [int(c) for c in args.concurrency.split(",")]:
            with ThreadPoolExecutor(level) as pool:
                latencies = list(pool.map(lambda _: _timed(api), range(args.requests)))
            print(
                f"concurrency {level}: p50 {statistics.median(latencies):.1f} ms, "
                f"p95 {_percentile(latencies, 95):.1f} ms, p99 {_percentile(latencies, 99):.1f} ms"
            )
    finally:
        if writer is not None:
            writer.stop.set()
            writer.join()
            print(f"writer: {len(writer.latencies)} writes, {len(writer.errors)} errors {writer.errors[:3]}")
    time.sleep(0.5)
    mismatches = _check(api, world.big["licenseID"], views)
    print("counts exact" if not mismatches else "MISMATCHES:\n" + "\n".join(mismatches))
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
