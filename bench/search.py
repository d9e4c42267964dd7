"""Ticket search benchmark: named query classes against the HTTP API, with real authentication.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench \\
        .venv/bin/python bench/search.py --base-url http://127.0.0.1:8765 --requests 200 --concurrency 1,4,8

With `--writer 5`, a writer thread creates and updates tickets of the largest license through the API at 5 writes/s
while the clients search, and a checker compares the searches' `X-Total-Results` with fresh counts (see Checker).

For each class and concurrency level it prints p50/p95/p99 latency (ms) and requests per second; with `--cpu` (Linux)
also where the box's CPU went per request: the web server's processes (`gunicorn`), PostgreSQL's, Redis's, this
client (its threads: the searches, and the writer and the checker when they run) and the whole machine's busy
time, read from /proc before and after each run. It then measures
each class's *floor*: the SQL that one request of the class runs (captured in-process from the real view, with the
count computed instead of cached, without the two authentication queries), executed alone on a warm connection.
Reads bench/credentials.json written by bench/dataset.py. See bench/README.md for the results.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import logging
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
        return self.call("GET", target, parse=parse)

    def call(self, method: str, target: str, body=None, *, parse: bool = True, ok=(200,)):
        headers = self.headers if body is None else {**self.headers, "Content-Type": "application/json"}
        payload = None if body is None else json.dumps(body)
        for attempt in (1, 2):
            conn = self._conn()
            try:
                conn.request(method, target, body=payload, headers=headers)
                response = conn.getresponse()
                body = response.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
        if response.status not in ok:
            raise RuntimeError(f"{method} {target}: {response.status} {body[:300]!r}")
        return response, json.loads(body) if parse else body


def _counted_uncached(queryset, license, digest=None) -> int:
    """`totals.exact_count` without the cache: counted every time (its queryset may be given as a function)."""
    return (queryset() if callable(queryset) else queryset).order_by().count()


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
        self.base_url = base_url
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


# --- the concurrent writer and the totals checker ----------------------------------------------------------


def generation(license_id) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COALESCE((SELECT value FROM tickets_searchgeneration WHERE license_id = %s), 0)",
            [license_id],
        )
        return cursor.fetchone()[0]


class Writer(threading.Thread):
    """Creates and updates tickets of the largest license through the API at `rate` writes/s: new tickets with
    the words and custom fields the classes search for, and changes of status, priority, plan, tags and notes."""

    def __init__(self, world, rate: float, seed: int):
        super().__init__(daemon=True)
        self.world, self.interval, self.rng = world, 1.0 / rate, random.Random(seed)
        self.api = Api(world.base_url, world.big)
        self.stop = threading.Event()
        self.latencies, self.errors = [], []
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM tickets_ticket WHERE license_id = %s AND silo = 'tickets' AND status = 'open' "
                "ORDER BY created_at DESC LIMIT 2000",
                [world.big["licenseID"]],
            )
            self.ids = [str(row[0]) for row in cursor.fetchall()]

    def _write(self):
        rng, n = self.rng, len(self.latencies)
        if n % 2 == 0:
            words = rng.choice(["order", "payment", "password reset", "refund delayed", "delivery"])
            body = {
                "subject": f"Bench {n}: {words}",
                "requester": {"email": f"bench{n}@example.com"},
                "message": {"text": f"My {words} question, {rng.choice(self.world.rare_words)}"},
                "priority": rng.choice([0, 10, 20]),
                "customFields": {"plan": rng.choice(["free", "pro", "enterprise"])},
            }
            return self.api.call("POST", "/v1/tickets", body, parse=False, ok=(201,))
        change = rng.choice(
            [
                {"status": rng.choice(["open", "pending"])},
                {"priority": rng.choice([0, 10, 20])},
                {"customFields": {"plan": rng.choice(["free", "pro", "enterprise"])}},
                {"tagIDs": rng.sample(self.world.popular_tags, rng.choice([0, 1, 2]))},
                {
                    "message": {
                        "text": f"note: the {rng.choice(['order', 'payment'])} is delayed",
                        "isPrivate": True,
                    }
                },
            ]
        )
        return self.api.call("PATCH", f"/v1/tickets/{rng.choice(self.ids)}", change, parse=False)

    def run(self):
        next_at = time.perf_counter()
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                self._write()
                self.latencies.append((time.perf_counter() - started) * 1000)
            except Exception as exc:  # noqa: BLE001 (reported at the end)
                self.errors.append(str(exc)[:200])
            next_at += self.interval
            self.stop.wait(max(0.0, next_at - time.perf_counter()))


class Checker(threading.Thread):
    """Checks served totals against fresh counts at the generation they were served at.

    A client reads the license's generation before and after its request; when both are equal the response
    was computed at that generation (authentication reads it in between). The checker takes the newest such
    response, opens a REPEATABLE READ transaction and reads the generation: if it is still the same, it runs the
    same search in-process with the count computed instead of cached, inside that snapshot, and compares; every
    waiting response of the same filters and generation is compared with the same fresh count. A response whose
    generation moved on before the checker got to it is counted as unverified (not as a pass)."""

    PAGING = {"page", "pageSize", "sortBy", "next.value", "next.ID"}

    def __init__(self, world, share: float = 0.5):
        super().__init__(daemon=True)
        self.world, self.pending, self.lock = world, {}, threading.Lock()
        self.share = share  # of one core, at most: the fresh counts compete with the measured server
        self.stop = threading.Event()
        self.checked = self.unverified = 0
        self.mismatches = []

    def served(self, credential, params, total, generation):
        key = (
            credential["licenseID"],
            json.dumps({k: v for k, v in params.items() if k not in self.PAGING}, sort_keys=True),
            generation,
        )
        with self.lock:
            self.pending.setdefault(key, []).append((params, total))

    def _fresh(self, credential, params, expected_generation):
        from django.db import connection, transaction
        from django.test import Client

        client = Client(HTTP_USER_AGENT="helpdesk-bench/1.0")
        token = base64.b64encode(f"{credential['accountID']}:{credential['token']}".encode()).decode()
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if generation(credential["licenseID"]) != expected_generation:
                return None
            response = client.get("/v1/tickets", params, HTTP_AUTHORIZATION=f"Basic {token}")
            # Authentication may write (a token's last use): in this snapshot a concurrent update of that row
            # is a serialization failure (503), which leaves the response unverified.
            return int(response["X-Total-Results"]) if response.status_code == 200 else None

    def run(self):
        from tickets import totals

        totals.exact_count = _counted_uncached  # in this process only
        while not self.stop.is_set() or self.pending:
            with self.lock:
                if not self.pending:
                    key = None
                else:
                    key = max(self.pending, key=lambda k: k[2])  # the newest generation first
                    served = self.pending.pop(key)
            if key is None:
                self.stop.wait(0.01)
                continue
            credential = self.world.big if key[0] == self.world.big["licenseID"] else self.world.small
            if self.stop.is_set():
                self.unverified += len(served)
                continue
            started = time.perf_counter()
            fresh = self._fresh(credential, served[0][0], key[2])
            # At most `share` of one core: the fresh counts (up to ~0.5 s each) compete with the measured server.
            self.stop.wait((time.perf_counter() - started) * (1 - self.share) / self.share)
            if fresh is None:
                self.unverified += len(served)
                continue
            for params, total in served:
                self.checked += 1
                if total != fresh:
                    self.mismatches.append(
                        {"params": params, "served": total, "fresh": fresh, "generation": key[2]}
                    )


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


def run_class(world, name, requests, concurrency, seed, checker=None, meter=None):
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
        before = generation(credential["licenseID"]) if checker else None
        started = time.perf_counter()
        # The load generator reads every body but does not parse it: its JSON parsing would take the CPU of
        # this shared machine from the server it measures (the status and X-Total-Results are checked).
        response, _ = api.get("/v1/tickets", params, parse=False)
        elapsed = (time.perf_counter() - started) * 1000
        if response.getheader("X-Total-Results") is None:
            raise RuntimeError(f"{params}: no X-Total-Results")
        if checker is not None:
            if generation(credential["licenseID"]) == before:
                checker.served(credential, params, int(response.getheader("X-Total-Results")), before)
            else:
                checker.unverified += 1
        if job is None:
            walk_state.params = _link_params(response, "next")
            walk_state.pages += 1
        with lock:
            latencies.append(elapsed)

    for job in jobs[: min(10, len(jobs))]:  # warm-up (connections, caches)
        one(job)
    latencies.clear()
    cpu_before = meter.snapshot() if meter else None
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, jobs))
    wall = time.perf_counter() - started
    result = {
        "p50": statistics.median(latencies),
        "p95": _percentile(latencies, 95),
        "p99": _percentile(latencies, 99),
        "rps": len(latencies) / wall,
    }
    if meter:
        result["cpu_ms"] = meter.per_request(cpu_before, meter.snapshot(), len(latencies))
        result["cpu_ms"]["capacity"] = (os.cpu_count() or 1) * wall * 1000 / len(latencies)
    return result


class CpuMeter:
    """CPU seconds by process group (/proc/<pid>/stat), to split a run's CPU per request: `--cpu`."""

    GROUPS = ("gunicorn", "postgres", "redis")
    TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def snapshot(self) -> dict:
        processes = {}  # pid -> (group, seconds)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    command = handle.read().decode(errors="replace")
                with open(f"/proc/{pid}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            group = next((g for g in self.GROUPS if g in command), None)
            # utime + stime: fields 14 and 15 of stat(5), 11 and 12 counted from 0 after the command's name
            if group is not None:
                processes[pid] = (group, (int(fields[11]) + int(fields[12])) / self.TICK)
        usage = os.times()
        with open("/proc/stat") as handle:
            ticks = [int(value) for value in handle.readline().split()[1:]]
        # user, nice, system, irq and softirq: not idle, iowait, nor steal (time the hypervisor gave elsewhere)
        machine = (sum(ticks[:7]) - ticks[3] - ticks[4]) / self.TICK
        return {"processes": processes, "client": usage.user + usage.system, "machine": machine}

    def per_request(self, before: dict, after: dict, requests: int) -> dict[str, float]:
        """ms per request by group. A process that ended during the run is not counted (its last reading is
        gone); one that started is counted whole."""
        spent = dict.fromkeys(self.GROUPS, 0.0)
        for pid, (group, seconds) in after["processes"].items():
            was = before["processes"].get(pid)
            spent[group] += seconds - (was[1] if was and was[0] == group else 0.0)
        spent["client"] = after["client"] - before["client"]
        spent["machine"] = after["machine"] - before["machine"]
        return {key: value * 1000 / requests for key, value in spent.items()}


# --- the floor: the same SQL without the web stack -------------------------------------------------------


def floor(world, name, samples, seed):
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tickets import totals

    rng = random.Random(seed)
    original = totals.exact_count
    totals.exact_count = _counted_uncached
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
        totals.exact_count = original
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
    parser.add_argument(
        "--writer", type=float, default=0, help="writes/s to the largest license during the runs (0: none)"
    )
    parser.add_argument(
        "--check-share",
        type=float,
        default=0.5,
        help="with --writer: the share of one core the totals checker may take (its fresh counts load the box)",
    )
    parser.add_argument(
        "--cpu", action="store_true", help="also print each run's CPU per request by process group (Linux)"
    )
    args = parser.parse_args()
    if not 0 < args.check_share <= 1:
        parser.error("--check-share must be in (0, 1]")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
    import django

    django.setup()
    logging.getLogger("helpdesk.request").setLevel(logging.WARNING)  # the checker's in-process requests
    with open(args.credentials) as handle:
        world = World(args.base_url, json.load(handle))
    levels = [int(c) for c in args.concurrency.split(",")]
    names = args.classes.split(",")
    results = defaultdict(dict)
    header = f"{'class':<16}" + "".join(f" | c={c:<2} p50    p95    p99    req/s" for c in levels)
    print(header)
    print("-" * len(header))
    writer = checker = None
    if args.writer:
        writer, checker = Writer(world, args.writer, args.seed), Checker(world, args.check_share)
        writer.start()
        checker.start()
        time.sleep(2)  # the first writes: every cached total of the license is of an older generation
    meter = CpuMeter() if args.cpu else None
    for name in names:
        row = f"{name:<16}"
        for level in levels:
            r = run_class(world, name, args.requests, level, args.seed, checker, meter)
            results[name][f"c{level}"] = r
            row += f" |      {r['p50']:6.1f} {r['p95']:6.1f} {r['p99']:6.1f} {r['rps']:6.0f}"
        print(row, flush=True)
    if meter:
        # What one request cost the box: a closed loop at N req/s needs N x machine ms of CPU a second, so the
        # machine column bounds req/s at capacity / machine (capacity: the cores' ms per request of the run).
        print(
            f"\nCPU ms per request   {'web':>6} {'postgres':>8} {'redis':>6} {'client':>6} {'machine':>7} of {'cores':>5}"
        )
        for name in names:
            for level in levels:
                c = results[name][f"c{level}"]["cpu_ms"]
                print(
                    f"{name:<16} c={level:<2} {c['gunicorn']:6.2f} {c['postgres']:8.2f} {c['redis']:6.2f}"
                    f" {c['client']:6.2f} {c['machine']:7.2f} of {c['capacity']:5.2f}"
                )
    failed = False
    if writer is not None:
        writer.stop.set()
        checker.stop.set()
        writer.join()
        checker.join()
        lat = writer.latencies or [0.0]
        print(
            f"\nwriter: {len(writer.latencies)} writes, p50 {statistics.median(lat):.1f} ms, "
            f"p95 {_percentile(lat, 95):.1f} ms, {len(writer.errors)} errors {writer.errors[:3]}"
        )
        print(
            f"totals: {checker.checked} responses checked against a fresh count at their generation, "
            f"{checker.unverified} unverified (generation moved), {len(checker.mismatches)} mismatches"
        )
        for mismatch in checker.mismatches[:10]:
            print("  MISMATCH", mismatch)
        results["_writer"] = {
            "writes": len(writer.latencies),
            "p50": statistics.median(lat),
            "p95": _percentile(lat, 95),
            "errors": len(writer.errors),
            "checked": checker.checked,
            "unverified": checker.unverified,
            "mismatches": checker.mismatches,
        }
        failed = bool(checker.mismatches or writer.errors)
    if not args.no_floor:
        print(f"\n{'class':<16} | floor p50 (ms, page + related + uncached count) | of which count")
        for name in names:
            f = floor(world, name, args.floor_samples, args.seed)
            results[name]["floor"] = f
            print(f"{name:<16} | {f['floor_p50']:8.2f} | {f['count_p50']:8.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)
    if failed:
        sys.exit("FAILED: totals mismatched or writes failed")


if __name__ == "__main__":
    main()
