"""Cold totals: a search whose exact total is not in the count cache, through the WSGI app and its count alone.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<a copy of helpdesk_bench> REDIS_URL=redis://127.0.0.1:6379/<N> \\
        CACHE_KEY_PREFIX=<yours> DEBUG=false SECRET_KEY=bench-only \\
        .venv/bin/python bench/cold_total.py --query payment --runs 5 --credentials bench/credentials.json

For the largest license of the credentials (bench/dataset.py writes them), each run: the count cache's entries
deleted (`tickets:count*`, so the total is counted, not found or rolled forward), then `GET /v1/tickets?query=...`
timed through the WSGI app in this process (real Basic authentication), then the count statement that request
ran, alone on the same connection, as tickets.totals runs it (TICKET_COUNT_WORK_MEM, no JIT, in its own
transaction); at the end, the same request with its total cached. With `--explain`, that statement's
`EXPLAIN (ANALYZE, BUFFERS)`. The load average is printed beside: on a shared box, only side-by-side numbers
compare (bench/README.md, issue 34 "a common word's cold total").
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
os.environ.setdefault("RATE_LIMIT_PER_TOKEN", "1000000000")
os.environ.setdefault("RATE_LIMIT_PER_LICENSE", "1000000000")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")


def _environ(query: str, authorization: str) -> dict:
    from bench import cpu  # its WSGI environ (importing it sets the same environment defaults as above)

    return cpu._environ("/v1/tickets", query, authorization)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--query", default="payment")
    parser.add_argument("--params", default="", help="more search parameters, URL-encoded")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--credentials", default=os.path.join(os.path.dirname(__file__), "credentials.json"))
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.cache import cache
    from django.core.wsgi import get_wsgi_application
    from django.db import connection, transaction

    app = get_wsgi_application()
    with open(args.credentials) as handle:
        big = max(json.load(handle), key=lambda c: c["tickets"])
    authorization = "Basic " + base64.b64encode(f"{big['accountID']}:{big['token']}".encode()).decode()
    query = urllib.parse.urlencode({"query": args.query}) + (f"&{args.params}" if args.params else "")
    counted = []

    def capture(execute, sql, params, many, context):
        if "SELECT COUNT(*) FROM (" in sql and sql.startswith("SELECT COALESCE("):
            counted.append((sql, params))
        return execute(sql, params, many, context)

    def request() -> tuple[float, str]:
        status, headers = [], []
        started = time.perf_counter()
        body = app(_environ(query, authorization), lambda s, h: (status.append(s), headers.extend(h)))
        b"".join(body)
        took = (time.perf_counter() - started) * 1000
        if hasattr(body, "close"):
            body.close()
        if not status[0].startswith("200"):
            raise SystemExit(f"/v1/tickets?{query}: {status[0]}")
        return took, dict(headers).get("X-Total-Results", "?")

    def statement(sql, params, explain=False):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('work_mem', %s, true), set_config('jit', 'off', true)",
                [settings.TICKET_COUNT_WORK_MEM],
            )
            started = time.perf_counter()
            cursor.execute(("EXPLAIN (ANALYZE, BUFFERS) " if explain else "") + sql, params)
            rows = cursor.fetchall()
            return (time.perf_counter() - started) * 1000, rows

    request()  # the process's first request (imports, connections), not measured
    print(f"license {big['licenseID']} ({big['tickets']} tickets), /v1/tickets?{query}")
    requests, alone = [], []
    for run in range(args.runs):
        cache.delete_pattern("tickets:count*")
        counted.clear()
        with connection.execute_wrapper(capture):
            took, total = request()
        if not counted:
            raise SystemExit("the request ran no count: is the total cached elsewhere?")
        sql, params = counted[-1]
        took_alone, rows = statement(sql, params)
        requests.append(took)
        alone.append(took_alone)
        load = " ".join(f"{v:.1f}" for v in os.getloadavg())
        print(
            f"run {run + 1}: request {took:7.1f} ms (total {total}), count statement alone {took_alone:7.1f} ms "
            f"(count {rows[0][1]}), load {load}"
        )
    print(
        f"median: request {statistics.median(requests):.1f} ms, statement {statistics.median(alone):.1f} ms; "
        f"min: {min(requests):.1f} / {min(alone):.1f} ms"
    )
    warm = [request()[0] for _ in range(args.runs)]  # the total now cached: what the request costs besides it
    print(f"the same request with its total cached: {' / '.join(f'{ms:.1f}' for ms in warm)} ms")
    if args.explain:
        print("\n".join(row[0] for row in statement(*counted[-1], explain=True)[1]))


if __name__ == "__main__":
    main()
