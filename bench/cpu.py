"""CPU per search request inside the application: the WSGI app called directly, no server, no client.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench REDIS_URL=redis://127.0.0.1:6379/12 \\
        CACHE_KEY_PREFIX=bench DEBUG=false SECRET_KEY=bench-only \\
        .venv/bin/python bench/cpu.py --requests 1000 [--profile 30]

For a few query classes of bench/search.py (largest license, real Basic authentication, counts from the cache)
it prints the process CPU time per request (`time.process_time`, so waiting for PostgreSQL and Redis is not
counted) and the wall time. `--profile N` prints the N functions with the most cumulative time for one class.
This is what the web workers spend per request; bench/search.py measures the whole system under load.

`--instructions` counts instead the instructions the interpreter executes per request, under valgrind's
callgrind (each class: a run that makes N requests less a run that makes none, after the same warm-up; the
start and the warm-up run uninstrumented, which makes a run minutes shorter). Time
per request depends on the machine and on whatever else it runs; the instruction count does not, so it
compares code across machines (valgrind slows the process ~50x: use a few hundred requests, not thousands).

Beside each class it measures its **floor** (`floor:<class>`, issue #34): a plain Django view behind the same
middleware, at a path under /v1/, that runs the statements the class's request ran (captured once from the real
view with the count cached: the caller's query and the page's SQL, each `fetchall`ed) and returns the same JSON
documents (`orjson.dumps` of the captured body, as the API renders). What a request must cost at least with
this stack; the goal is each class within 2.5x (inbox 2x) of its own floor.

The collector: the warm-up leaves many new objects behind (caches filled, modules' first calls), so the
collector's next full collection (CPython collects the oldest generation once the objects that survived into it
since the last one reach a quarter of it) fell a few requests later, into the counted requests or not (the
whole heap, ~150,000 objects, ~55 M instructions; over 10 requests 5.5 M each): the same inbox code read
13.2 M on one data set and 7.7 M on another (issue 34). A full collection right after the warm-up (uncounted)
leaves nothing pending, as in a worker that has served a while: in 2,000 inbox requests after it CPython made
no full collection (638 young and 57 middle ones, ~0.3 ms of the request's ~5 ms CPU, which the counts keep).
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import gc
import io
import json
import os
import pstats
import re
import subprocess
import sys
import time
import urllib.parse

import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
# Thousands of requests a minute on one token: counted like any request (that cost is measured), never a 429.
os.environ.setdefault("RATE_LIMIT_PER_TOKEN", "1000000000")
os.environ.setdefault("RATE_LIMIT_PER_LICENSE", "1000000000")
# Plain http in-process: with DEBUG=false the settings redirect every request to https (a 301).
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")

CLASSES = {
    "inbox": {"status": "open", "sortBy": "lastMessageAt"},
    "tags_none": {"hasTags": "N"},
    "relative_dates": {"createdDateFrom": "-30d"},
    "page_of_100": {"pageSize": "100"},
    "fulltext_common": {"query": "payment"},
}


def _environ(path: str, query: str, authorization: str) -> dict:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8765",
        "HTTP_HOST": "127.0.0.1:8765",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_AUTHORIZATION": authorization,
        "HTTP_USER_AGENT": "helpdesk-bench/1.0",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "SERVER_PROTOCOL": "HTTP/1.1",
    }


WARM_UP = 5  # requests of each class and of its floor before any is measured
_FLOORS: dict[str, tuple[list, list]] = {}  # class -> (its request's statements, its JSON documents)


def _floor_view(request, name):
    from django.db import connection
    from django.http import HttpResponse

    statements, documents = _FLOORS[name]
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)
            cursor.fetchall()
    return HttpResponse(orjson.dumps(documents), content_type="application/json")


def _install_floor() -> None:
    from django.urls import clear_url_caches, path

    from helpdesk import urls

    urls.urlpatterns.insert(0, path("v1/bench-floor/<str:name>", _floor_view))
    clear_url_caches()


def _capture_floor(name: str, call) -> None:
    """The statements the real request of `name` runs (its count already cached), and its documents."""
    from django.db import connection

    statements = []

    def capture(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("SELECT"):  # not the token's once-a-minute last_used_at
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        body = call(name)
    _FLOORS[name] = (statements, json.loads(body))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions of --profile-class")
    parser.add_argument("--profile-class", default="inbox")
    parser.add_argument("--credentials", default=os.path.join(os.path.dirname(__file__), "credentials.json"))
    parser.add_argument(
        "--instructions", action="store_true", help="instructions per request, under callgrind"
    )
    parser.add_argument("--classes", default=",".join(CLASSES), help="with --instructions (also: tags, team)")
    parser.add_argument("--count-only", help=argparse.SUPPRESS)  # CLASS:N, the run under callgrind
    parser.add_argument(
        "--callgrind-out",
        metavar="DIR",
        help="with --instructions: keep each run's callgrind output in DIR (callgrind.<class>.<N>), for "
        "callgrind_annotate --inclusive=yes",
    )
    args = parser.parse_args()
    if args.instructions:
        return count_instructions(args)

    from django.core.wsgi import get_wsgi_application

    app = get_wsgi_application()
    with open(args.credentials) as handle:
        big = max(json.load(handle), key=lambda c: c["tickets"])
    from accounts.models import Team
    from tickets.models import Tag

    tags = [
        str(pk) for pk in Tag.objects.filter(license_id=big["licenseID"]).values_list("pk", flat=True)[:2]
    ]
    team = str(Team.objects.filter(license_id=big["licenseID"]).values_list("pk", flat=True).first())
    CLASSES["tags"] = {"tagIDs[]": tags}
    CLASSES["team"] = {"teamIDs[]": [team]}
    authorization = "Basic " + base64.b64encode(f"{big['accountID']}:{big['token']}".encode()).decode()

    def call(query: str, path: str = "/v1/tickets") -> bytes:
        status = []
        body = app(_environ(path, query, authorization), lambda s, h: status.append(s))
        content = b"".join(body)
        if hasattr(body, "close"):
            body.close()
        if not status[0].startswith("200"):
            raise SystemExit(f"{path}?{query}: {status[0]}")
        return content

    queries = {key: urllib.parse.urlencode(params, doseq=True) for key, params in CLASSES.items()}
    _install_floor()

    def floor(name: str) -> bytes:
        return call("", f"/v1/bench-floor/{name}")

    if args.count_only:  # warm up every class and its floor (the same in each run), then N requests of one
        name, requests = args.count_only.rsplit(":", 1)
        _steady()
        for key, query in queries.items():
            for _ in range(WARM_UP):
                call(query)
            _capture_floor(key, lambda key: call(queries[key]))
            for _ in range(WARM_UP):
                floor(key)
        # Every run's requests start from the same collector state: see "The collector" in the docstring.
        gc.collect()
        _await_instrumentation()
        if name.startswith("floor:"):
            for _ in range(int(requests)):
                floor(name.removeprefix("floor:"))
        else:
            for _ in range(int(requests)):
                call(queries[name])
        return

    print(f"{'class':<16} {'CPU ms/request':>15} {'wall ms/request':>16} {'floor CPU ms':>13}")
    for name, query in queries.items():
        for _ in range(50):
            call(query)
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(args.requests):
            call(query)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        _capture_floor(name, lambda key: call(queries[key]))
        for _ in range(50):
            floor(name)
        floor_cpu = time.process_time()
        for _ in range(args.requests):
            floor(name)
        floor_cpu = time.process_time() - floor_cpu
        print(
            f"{name:<16} {cpu * 1000 / args.requests:>15.2f} {wall * 1000 / args.requests:>16.2f}"
            f" {floor_cpu * 1000 / args.requests:>13.2f}"
        )

    if args.profile:
        query = urllib.parse.urlencode(CLASSES[args.profile_class], doseq=True)
        profiler = cProfile.Profile(time.process_time)  # CPU, as above: waiting for PostgreSQL is not counted
        profiler.enable()
        for _ in range(args.requests):
            call(query)
        profiler.disable()
        stats = pstats.Stats(profiler).sort_stats("cumulative")
        stats.print_stats(args.profile)
        stats.sort_stats("tottime").print_stats(args.profile)


def _steady() -> None:
    """Under callgrind, what happens once every few minutes of wall time stays out of the counts: a run of the
    loaded box's takes minutes, so the token's once-a-minute `last_used_at` write and the recount of a total
    whose cache entry expired (every 5 minutes) would land in one run and not the next (10.4 M and 11.2 M
    for the same inbox code). The token is touched once; the bench's cache (give it a Redis database of its
    own, or at least a CACHE_KEY_PREFIX of its own: only its keys are deleted) is emptied, so that every total
    is counted in the run's own uninstrumented warm-up and none expires during its requests."""
    from datetime import timedelta

    from django.core.cache import cache

    from accounts.api import authentication

    authentication.LAST_USED_RESOLUTION = timedelta(days=1)
    # django-redis: only this CACHE_KEY_PREFIX's keys (its `clear` is FLUSHDB, which would empty the cache of
    # another run sharing the database under its own prefix)
    if hasattr(cache, "delete_pattern"):
        cache.delete_pattern("*")
    else:
        cache.clear()


def _await_instrumentation() -> None:
    """Under `_callgrind`: say the warm-up is done, and wait until callgrind instruments the requests."""
    ready = os.environ.get("BENCH_CALLGRIND_READY")
    if ready:
        open(ready, "w").close()
        while not os.path.exists(ready + ".go"):
            time.sleep(0.01)


def _callgrind(arguments: list[str], script: str = __file__, out: str = "/dev/null") -> int:
    """The instructions of the run's requests: `script` run with `arguments` under callgrind starts and warms up
    uninstrumented (callgrind's `--instr-atstart=no` runs it several times faster), then says so
    (`_await_instrumentation`) and gets `callgrind_control -i on` before its requests. bench/write_cpu.py and
    bench/mail_in.py reuse this with their own scripts. `out`: where callgrind writes its profile."""
    ready = f"/tmp/bench-cpu-{os.getpid()}-ready"
    for path in (ready, ready + ".go"):
        if os.path.exists(path):
            os.remove(path)
    command = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--instr-atstart=no",
        sys.executable, os.path.abspath(script), *arguments,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0", "BENCH_CALLGRIND_READY": ready}
    with subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env
    ) as run:
        while not os.path.exists(ready) and run.poll() is None:
            time.sleep(0.2)
        if run.poll() is None:
            subprocess.run(["callgrind_control", "-i", "on", str(run.pid)], capture_output=True, check=True)
            open(ready + ".go", "w").close()
        stderr = run.communicate()[1]
    for path in (ready, ready + ".go"):
        if os.path.exists(path):
            os.remove(path)
    found = re.search(r"Collected : (\d+)", stderr)
    if run.returncode or not found:
        raise SystemExit(f"callgrind failed ({' '.join(arguments)}):\n{stderr[-2000:]}")
    return int(found.group(1))


def count_instructions(args) -> None:
    names = args.classes.split(",")

    def counted(count_only: str) -> int:
        out = "/dev/null"
        if args.callgrind_out:
            os.makedirs(args.callgrind_out, exist_ok=True)
            out = os.path.join(args.callgrind_out, "callgrind." + count_only.replace(":", "."))
        return _callgrind(["--credentials", args.credentials, "--count-only", count_only], out=out)

    base = counted(f"{names[0]}:0")
    print(f"{'class':<16} {'instructions/request':>21} {'floor':>9} {'ratio':>6}")
    for name in names:
        spent = (counted(f"{name}:{args.requests}") - base) / args.requests
        floor = (counted(f"floor:{name}:{args.requests}") - base) / args.requests
        print(f"{name:<16} {spent / 1e6:>19.2f} M {floor / 1e6:>7.2f} M {spent / floor:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
