"""CPU and SQL per ticket write through the API: create, agent reply, PATCH (issue #34).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench REDIS_URL=redis://127.0.0.1:6379/12 \\
        CACHE_KEY_PREFIX=bench DEBUG=false SECRET_KEY=bench-only \\
        .venv/bin/python bench/write_cpu.py --credentials bench/credentials.json [--instructions --writes 40]

The WSGI app is called directly (no server, no client), with the largest license's owner token (an agent):

* `create`: POST /v1/tickets, a subject, a requester and a first message (the agent's: a mail to the requester);
* `reply`: PATCH /v1/tickets/{ID} with a public message (a mail to the requester), on tickets of a pool of 50;
* `patch`: PATCH /v1/tickets/{ID} changing the priority only, on the same pool.

Without `--instructions` it prints the process CPU per write (`time.process_time`: waiting for PostgreSQL and
Redis is not counted) and the SQL statements of one write of each kind (after the warm-up). `--instructions`
counts the interpreter's instructions per write under valgrind's callgrind, with bench/cpu.py's machinery: a run
that makes N writes less a run that makes none, after the same warm-up. The mail each write queues is enqueued on
the broker (Redis) as in production and never sent: the worker's rendering and sending is not counted here,
`--worker` measures it apart (`templates_app.mail.deliver` of the rows the writes queued, sending to a
locmem backend). Each run writes rows: use a database of its own (bench/dataset.py --tickets 20000).
"""

from __future__ import annotations

import argparse
import base64
import gc
import io
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
os.environ.setdefault("RATE_LIMIT_PER_TOKEN", "1000000000")
os.environ.setdefault("RATE_LIMIT_PER_LICENSE", "1000000000")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("LOG_LEVEL", "WARNING")  # not a request log line per write

from bench import cpu  # noqa: E402  (its environment defaults are the same)

KINDS = ("create", "reply", "patch")
WARM_UP = 5  # writes of each kind before any is measured
POOL = 50  # tickets the replies and PATCHes go to, in turn


class Writer:
    def __init__(self, credentials: str):
        from django.core.wsgi import get_wsgi_application

        self.app = get_wsgi_application()
        with open(credentials) as handle:
            big = max(json.load(handle), key=lambda c: c["tickets"])
        token = base64.b64encode(f"{big['accountID']}:{big['token']}".encode()).decode()
        self.authorization = "Basic " + token
        from tickets.models import Ticket

        self.pool = [
            str(pk)
            for pk in Ticket.objects.filter(license_id=big["licenseID"], silo="tickets", status="open")
            .order_by("pk")
            .values_list("pk", flat=True)[:POOL]
        ]
        self.done = dict.fromkeys(KINDS, 0)

    def call(self, method: str, path: str, body: dict) -> bytes:
        payload = json.dumps(body).encode()
        environ = cpu._environ(path, "", self.authorization)
        environ.update(
            REQUEST_METHOD=method,
            CONTENT_TYPE="application/json",
            CONTENT_LENGTH=str(len(payload)),
        )
        environ["wsgi.input"] = io.BytesIO(payload)
        status = []
        response = self.app(environ, lambda s, h: status.append(s))
        content = b"".join(response)
        if hasattr(response, "close"):
            response.close()
        if not status[0].startswith(("200", "201")):
            raise SystemExit(f"{method} {path}: {status[0]} {content[:300]!r}")
        return content

    def write(self, kind: str) -> bytes:
        n = self.done[kind] = self.done[kind] + 1
        if kind == "create":
            body = {
                "subject": f"Order {n} did not arrive",
                "requester": {"email": f"customer{n % 97}@customer.example", "name": "Jane Doe"},
                "message": {"text": f"Hello,\n\nwe sent your order {n} today.\n\nKind regards"},
            }
            return self.call("POST", "/v1/tickets", body)
        ticket = self.pool[n % len(self.pool)]
        if kind == "reply":
            body = {"message": {"text": f"Hello,\n\nyour order {n} left our warehouse today."}}
        else:
            body = {"priority": 10 * (n % 2)}
        return self.call("PATCH", f"/v1/tickets/{ticket}", body)


def _statements(writer: Writer, kind: str) -> int:
    """As the request log counts them (helpdesk.logs): every statement sent, savepoints and commit not."""
    from django.db import connection

    count = []

    def counter(execute, sql, params, many, context):
        count.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counter):
        writer.write(kind)
    return len(count)


def _worker_cpu(rows: list) -> float:
    """CPU per row of rendering and sending the queued mail (to Django's locmem backend)."""
    from django.test.utils import override_settings

    from templates_app import mail

    with override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"):
        started = time.process_time()
        for pk in rows:
            mail.deliver(message_id=pk)
        return (time.process_time() - started) / max(len(rows), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--credentials", default=os.path.join(os.path.dirname(__file__), "credentials.json"))
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--instructions", action="store_true", help="instructions per write, under callgrind")
    parser.add_argument("--worker", action="store_true", help="also the worker's CPU per mail it sends")
    parser.add_argument("--count-only", help=argparse.SUPPRESS)  # KIND:N, the run under callgrind
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if args.instructions:
        base = cpu._callgrind(["--credentials", args.credentials, "--count-only", f"{kinds[0]}:0"], __file__)
        print(f"{'write':<8} {'instructions/write':>19}")
        for kind in kinds:
            spent = (
                cpu._callgrind(
                    ["--credentials", args.credentials, "--count-only", f"{kind}:{args.writes}"], __file__
                )
                - base
            )
            print(f"{kind:<8} {spent / args.writes / 1e6:>17.2f} M", flush=True)
        return

    import django

    django.setup()
    writer = Writer(args.credentials)
    if args.count_only:  # the same warm-up in every run, then N writes of one kind
        kind, writes = args.count_only.rsplit(":", 1)
        cpu._steady()
        for each in KINDS:
            for _ in range(WARM_UP):
                writer.write(each)
        # every run's writes start from the same collector state, as bench/cpu.py's requests do ("The collector"):
        # without it a full collection fell inside the counted creates of one run and not of the next (18.29 M
        # and 20.16 M per create for code whose validation alone is 40% cheaper)
        gc.collect()
        cpu._await_instrumentation()
        for _ in range(int(writes)):
            writer.write(kind)
        return

    from templates_app.models import OutboundMessage

    cpu._steady()
    print(f"{'write':<8} {'CPU ms/write':>13} {'statements':>11}")
    for kind in kinds:
        for _ in range(WARM_UP):
            writer.write(kind)
        statements = _statements(writer, kind)
        started = time.process_time()
        for _ in range(args.writes):
            writer.write(kind)
        spent = (time.process_time() - started) / args.writes
        print(f"{kind:<8} {spent * 1000:>13.2f} {statements:>11}", flush=True)
    if args.worker:
        pending = OutboundMessage.objects.filter(status=OutboundMessage.STATUS_PENDING).order_by("created_at")
        rows = list(pending.values_list("pk", flat=True)[: args.writes])
        print(
            f"worker   {_worker_cpu(rows) * 1000:>13.2f} ms of CPU per mail rendered and sent ({len(rows)})"
        )


if __name__ == "__main__":
    main()
