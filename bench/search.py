"""Ticket search benchmark: named query classes against the HTTP API, with real authentication.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench \\
        .venv/bin/python bench/search.py --base-url http://127.0.0.1:8765 --requests 200 --concurrency 1,4,8

For each class and concurrency level it prints p50/p95/p99 latency (ms) and requests per second. It then measures
each class's *floor*: the SQL that one request of the class runs (captured in-process from the real view, with the
count computed instead of cached, without the two authentication queries), executed alone on a warm connection.
Reads bench/credentials.json written by `manage.py bench_tickets`. See bench/README.md for the results.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import random
import re
import statistics
import sys
import threading
import time
import urllib.parse
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Api:
    """One persistent HTTP connection per thread, Basic auth with a personal access token."""

    def __init__(self, base_url: str, credential: dict):
        self.url = urllib.parse.urlparse(base_url)
        token = base64.b64encode(f"{credential['accountID']}:{credential['token']}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}", "User-Agent": "helpdesk-bench/1.0"}
        self.local = threading.local()

    def _conn(self):
        if getattr(self.local, "conn", None) is None:
            self.local.conn = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=30)
        return self.local.conn

    def get(self, path: str, params=None, *, parse: bool = True):
        query = urllib.parse.urlencode(params or {}, doseq=True)
        target = f"{path}?{query}" if query else path
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request("GET", target, headers=self.headers)
                response = conn.getresponse()
                body = response.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
        if response.status != 200:
            raise RuntimeError(f"{target}: {response.status} {body[:300]!r}")
        return response, json.loads(body) if parse else body


def _link_params(response, rel: str):
    for part in (response.getheader("Link") or "").split(","):
        if f'rel="{rel}"' in part:
            url = part.split(";")[0].strip().strip("<>")
            return urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    return None


class World:
    """What the query classes draw from: the largest and a small license, their teams, agents, tags, words."""

    def __init__(self, base_url: str, credentials: list[dict]):
        ranked = sorted(credentials, key=lambda c: c["tickets"], reverse=True)
        self.big, self.small = ranked[0], ranked[len(ranked) // 2 + 10 if len(ranked) > 20 else -1]
        self.api = {c["licenseID"]: Api(base_url, c) for c in (self.big, self.small)}
        big = self.api[self.big["licenseID"]]
        self.teams = [t["ID"] for t in big.get("/v1/teams")[1]]
        self.agents = [a["ID"] for a in big.get("/v1/agents")[1]]
        self.tags = [t["ID"] for t in big.get("/v1/tags")[1]]
        self.popular_tags = sorted(self.tags)[:5]
        self.rare_words = self._rare_words()
        self.deep = self._deep_cursor()

    def _rare_words(self) -> list[str]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT search_text FROM tickets_ticket WHERE license_id = %s AND silo = 'tickets' "
                "AND status = 'open' ORDER BY created_at DESC LIMIT 3000",
                [self.big["licenseID"]],
            )
            words = set()
            for (text,) in cursor.fetchall():
                words.update(
                    re.findall(
                        r"\b(?:ka|ro|mi|tu|ze|pa|li|no|vu|sa|gre|bri|tol|zan|mek|quo|fir|dax|lum|pew){4}\b",
                        text,
                    )
                )
        return sorted(words)[:300] or ["nothing"]

    def _deep_cursor(self) -> dict:
        """The cursor of the 200,000th ticket of the default search in the largest license."""
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT created_at, id FROM tickets_ticket WHERE license_id = %s AND silo = 'tickets' "
                "AND status = 'open' ORDER BY created_at DESC, id DESC OFFSET 199999 LIMIT 1",
                [self.big["licenseID"]],
            )
            row = cursor.fetchone()
        if row is None:
            return {}
        return {"next.value": row[0].strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "next.ID": str(row[1])}


# --- the query classes: each returns (license credential, params) ---------------------------------------------


def inbox(w, rng):
    return w.big, {"status": "open", "sortBy": "lastMessageAt"}


def team_assignee(w, rng):
    if rng.random() < 0.5:
        return w.big, {"assignment.agentID": rng.choice(w.agents)}
    return w.big, {"teamIDs[]": rng.choice(w.teams)}


def tags(w, rng):
    return w.big, {"tagIDs[]": rng.sample(w.popular_tags, rng.choice([1, 1, 2]))}


def custom_priority(w, rng):
    return w.big, {
        "customFields.plan": rng.choice(["pro", "free", "enterprise"]),
        "priority": "10",
        "priorityOp": "gte",
    }


def relative_dates(w, rng):
    return w.big, rng.choice(
        [
            {"createdDateFrom": "-30d"},
            {"lastMessageFrom": "-7D", "timezone": "Europe/Warsaw", "sortBy": "lastMessageAt"},
            {"updatedDateFrom": "-3M", "updatedDateTo": "-1M", "sortBy": "updatedAt"},
        ]
    )


def fulltext_rare(w, rng):
    return w.big, {"query": rng.choice(w.rare_words)}


def fulltext_common(w, rng):
    return w.big, {"query": rng.choice(["order", "payment", "password", "delivery"])}


def fulltext_two(w, rng):
    return w.big, {
        "query": rng.choice(["refund delayed", "password reset", "order arrived", "invoice billing"])
    }


def page_numbers(w, rng):
    return w.big, {"page": rng.randint(2, 50)}


def page_of_100(w, rng):
    return w.big, {"pageSize": 100}


def deep_cursor(w, rng):
    return w.big, dict(w.deep)


def small_license(w, rng):
    return w.small, rng.choice([{}, {"sortBy": "updatedAt"}, {"hasAssignee": "N"}])


def rare_combo(w, rng):
    return w.big, {
        "priority": "20",
        "hasAssignee": "N",
        "rating": "bad",
        "status": "open",
        "language[]": rng.choice(["pl", "es"]),
    }


CLASSES = {
    fn.__name__: fn
    for fn in (
        inbox, team_assignee, tags, custom_priority, relative_dates, fulltext_rare, fulltext_common,
        fulltext_two, page_numbers, page_of_100, deep_cursor, small_license, rare_combo,
    )
}  # fmt: skip
CURSOR_WALK = "cursor_walk"


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def run_class(world, name, requests, concurrency, seed):
    rng = random.Random(seed)
    # A cursor walk's "request" is one page: clients follow the Link header's next cursor, 10 pages per walk.
    jobs = [None] * requests if name == CURSOR_WALK else [CLASSES[name](world, rng) for _ in range(requests)]
    latencies, lock = [], threading.Lock()
    walk_state = threading.local()

    def one(job):
        if job is None:
            credential = world.big
            params = getattr(walk_state, "params", None)
            if params is None or getattr(walk_state, "pages", 0) >= 10:
                params, walk_state.pages = {}, 0
        else:
            credential, params = job
        api = world.api[credential["licenseID"]]
        started = time.perf_counter()
        # The load generator reads every body but does not parse it: its JSON parsing would take the CPU of
        # this shared machine from the server it measures (the status and X-Total-Results are checked).
        response, _ = api.get("/v1/tickets", params, parse=False)
        elapsed = (time.perf_counter() - started) * 1000
        if response.getheader("X-Total-Results") is None:
            raise RuntimeError(f"{params}: no X-Total-Results")
        if job is None:
            walk_state.params = _link_params(response, "next")
            walk_state.pages += 1
        with lock:
            latencies.append(elapsed)

    for job in jobs[: min(10, len(jobs))]:  # warm-up (connections, caches)
        one(job)
    latencies.clear()
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, jobs))
    wall = time.perf_counter() - started
    return {
        "p50": statistics.median(latencies),
        "p95": _percentile(latencies, 95),
        "p99": _percentile(latencies, 99),
        "rps": len(latencies) / wall,
    }


# --- the floor: the same SQL without the web stack -------------------------------------------------------


def floor(world, name, samples, seed):
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tickets import counts

    rng = random.Random(seed)
    original = counts.cached_count
    counts.cached_count = lambda queryset, license_id: queryset.order_by().count()
    client = Client(HTTP_USER_AGENT="helpdesk-bench/1.0")
    timings, count_timings = [], []
    try:
        for _ in range(samples):
            credential, params = (world.big, {}) if name == CURSOR_WALK else CLASSES[name](world, rng)
            token = base64.b64encode(f"{credential['accountID']}:{credential['token']}".encode()).decode()
            with CaptureQueriesContext(connection) as captured:
                response = client.get("/v1/tickets", params, HTTP_AUTHORIZATION=f"Basic {token}")
            assert response.status_code == 200, response.content[:300]
            statements = [
                q["sql"]
                for q in captured.captured_queries
                if "accounts_personalaccesstoken" not in q["sql"]
                and '"accounts_agent"."account_id"' not in q["sql"]
            ]
            with connection.cursor() as cursor:
                for _warm in range(2):
                    total = count_total = 0.0
                    for sql in statements:
                        started = time.perf_counter()
                        cursor.execute(sql)
                        cursor.fetchall()
                        spent = (time.perf_counter() - started) * 1000
                        total += spent
                        if "COUNT(" in sql.upper():
                            count_total += spent
            timings.append(total)
            count_timings.append(count_total)
    finally:
        counts.cached_count = original
    return {"floor_p50": statistics.median(timings), "count_p50": statistics.median(count_timings)}


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", default="http://127.0.0.1:8765")
    parser.add_argument("--credentials", default="bench/credentials.json")
    parser.add_argument("--requests", type=int, default=200, help="requests per class and concurrency level")
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--classes", default=",".join([*CLASSES, CURSOR_WALK]))
    parser.add_argument("--floor-samples", type=int, default=20)
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
    import django

    django.setup()
    with open(args.credentials) as handle:
        world = World(args.base_url, json.load(handle))
    levels = [int(c) for c in args.concurrency.split(",")]
    names = args.classes.split(",")
    results = defaultdict(dict)
    header = f"{'class':<16}" + "".join(f" | c={c:<2} p50    p95    p99    req/s" for c in levels)
    print(header)
    print("-" * len(header))
    for name in names:
        row = f"{name:<16}"
        for level in levels:
            r = run_class(world, name, args.requests, level, args.seed)
            results[name][f"c{level}"] = r
            row += f" |      {r['p50']:6.1f} {r['p95']:6.1f} {r['p99']:6.1f} {r['rps']:6.0f}"
        print(row, flush=True)
    if not args.no_floor:
        print(f"\n{'class':<16} | floor p50 (ms, page + related + uncached count) | of which count")
        for name in names:
            f = floor(world, name, args.floor_samples, args.seed)
            results[name]["floor"] = f
            print(f"{name:<16} | {f['floor_p50']:8.2f} | {f['count_p50']:8.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
