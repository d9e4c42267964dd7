"""Inbound mail throughput: mails received per second through `manage.py receive_mail` and `smtp_inbound`.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench \\
        .venv/bin/python bench/mail_in.py --mails 400 --concurrency 4

Creates a fresh license (`--licenses N`: N licenses, the mails spread over them) in that database, then
1. receive_mail as an MTA runs it: one process per mail (`--concurrency` at a time), exit status checked;
2. receive_mail's work without the process start: the command's handle() in a loop, one process; it also
   prints the cost of one mail: SQL statements, CPU ms of this thread (time.thread_time: not the search
   probe's) and, when the database runs on this machine, CPU ms of its PostgreSQL backend (/proc);
3. smtp_inbound: the listener started as a subprocess (`--processes` listener processes), `--concurrency`
   smtplib clients each sending their share, reconnecting every 20 mails as an MTA's connection cache does
   (so that the connections spread over the processes);
and prints mails per second for each (every mail a new ticket with one message: the expensive case; a reply
costs about the same). Each run also times a ticket search in the (first) license meanwhile (p95, ms), to show
that search keeps answering. Runs with DEBUG=false unless DEBUG is set (as production does). Run by hand
(not part of the tests); see bench/README.md for results. `--only smtp` runs the listener alone. The mails come
from 50 senders of one domain, so the storm limits leave most of them unacknowledged; `--own-senders` gives each
mail a sender and domain of its own, so that each gets its acknowledgement (as with `--instructions`).

`--instructions` counts instead the interpreter's instructions per mail under valgrind's callgrind, as
bench/cpu.py --instructions does for requests: a fresh license, the same warm-up (`WARM_UP` mails), then N mails
less 0, each through what the SMTP handler runs in its database thread (`smtp._in_thread(smtp._deliver, ...)`:
inbound_message_receive with the connection checks around it). Every mail is a new ticket that gets its
acknowledgement (a sender and domain of its own: no storm limit). It also prints the SQL statements of one such
mail (`--sql`: each of them).
"""

from __future__ import annotations

import argparse
import email.policy
import gc
import io
import os
import resource
import smtplib
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage
from email.utils import make_msgid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
# as in production (DEBUG on logs every SQL statement: ~20% more CPU per mail); the listener and the pipes inherit it
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 50)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import close_old_connections, connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts import services as account_services  # noqa: E402
from templates_app.addresses import license_address  # noqa: E402
from tickets.models import Ticket  # noqa: E402

WORDS = [
    "order",
    "invoice",
    "printer",
    "password",
    "login",
    "refund",
    "delivery",
    "account",
    "portal",
    "token",
    "error",
    "broken",
]


def mail(number: int, run: str, sender: str = "") -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Customer {number} <{sender or f'customer{number % 50}@example.com'}>"
    msg["To"] = "support@acme.example"
    msg["Subject"] = f"{run} request {number}: {WORDS[number % len(WORDS)]}"
    msg["Message-ID"] = make_msgid(domain="bench.example")
    body = " ".join(WORDS[(number + i) % len(WORDS)] for i in range(60))
    msg.set_content(f"Hello,\n\n{body}\n\nThanks,\nCustomer {number}\n")
    msg.add_alternative(f"<p>Hello,</p><p>{body}</p><p>Thanks,<br>Customer {number}</p>", subtype="html")
    return msg.as_bytes(policy=email.policy.SMTP)  # CRLF, as on the wire


class SearchProbe:
    """Times a search (the default inbox: open tickets, newest first) every 50 ms while a run goes on."""

    def __init__(self, license_id):
        self.license_id, self.times, self.stop = license_id, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            started = time.perf_counter()
            list(
                Ticket.objects.filter(license_id=self.license_id, silo="tickets", status="open")
                .filter(search_text__icontains="printer")
                .order_by("-created_at", "-id")[:20]
            )
            self.times.append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)
        close_old_connections()

    def __enter__(self):
        self.thread = threading.Thread(target=self.run)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def p95(self) -> float:
        return statistics.quantiles(self.times, n=20)[-1] if len(self.times) >= 20 else max(self.times or [0])


def report(name: str, count: int, seconds: float, probe: SearchProbe) -> None:
    print(
        f"{name:<44} {count:>5} mails {seconds:7.1f} s {count / seconds:7.1f} mails/s   search p95 {probe.p95():6.1f} ms"
    )


def bench_pipe(mails, concurrency):
    def one(mail):
        address, raw = mail
        done = subprocess.run(
            [sys.executable, "manage.py", "receive_mail", "--recipient", address],
            input=raw, cwd=ROOT, capture_output=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, mails))
    return time.perf_counter() - started


def _backend_cpu_seconds() -> float | None:
    """CPU time of this connection's PostgreSQL backend process, when it runs on this machine."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_in_process(mails):
    def one(mail):
        address, raw = mail
        try:
            call_command("receive_mail", "--recipient", address, stdin=io.BytesIO(raw), stdout=io.StringIO())
        except SystemExit as exc:
            assert exc.code == 0, exc.code

    one(mails[0])  # warm-up: caches, the first ticket of the license
    with CaptureQueriesContext(connection) as queries:
        one(mails[1])
    backend_before, cpu_before = _backend_cpu_seconds(), time.thread_time()
    started = time.perf_counter()
    for raw in mails[2:]:
        one(raw)
    seconds = time.perf_counter() - started
    count = len(mails) - 2
    cpu_ms = (time.thread_time() - cpu_before) * 1000 / count
    backend_after = _backend_cpu_seconds()
    backend = f"{(backend_after - backend_before) * 1000 / count:.1f}" if backend_after is not None else "?"
    print(
        f"  per mail: {len(queries.captured_queries)} SQL statements, {cpu_ms:.1f} ms CPU in Python, "
        f"{backend} ms CPU in the PostgreSQL backend"
    )
    return seconds * len(mails) / count


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for children and theirs (the listener's)
    return usage.ru_utime + usage.ru_stime


def bench_smtp(mails, concurrency, processes=0, *, idle_cpu=None):
    """Seconds for `mails`; also prints the listener's CPU per mail (all its processes, less the CPU of a run
    that receives no mail: its start-up and stop), which the box's load inflates less than wall time."""
    if idle_cpu is None and mails:
        idle_cpu = bench_smtp([], concurrency, processes, idle_cpu=0.0)
    cpu_before = _children_cpu()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [
        sys.executable,
        "manage.py",
        "smtp_inbound",
        "--port",
        str(port),
        "--workers",
        str(concurrency),
        "--processes",
        str(processes),
    ]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        server.stdout.readline()  # "Receiving mail ..."
        shares = [mails[i::concurrency] for i in range(concurrency)]

        def client(share):
            for start in range(0, len(share), 20):
                with smtplib.SMTP("127.0.0.1", port) as smtp:
                    for address, raw in share[start : start + 20]:
                        smtp.sendmail("customer@example.com", [address], raw)

        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(client, shares))
        seconds = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
    cpu = _children_cpu() - cpu_before
    if not mails:
        return cpu
    print(
        f"  listener CPU per mail (its processes, start-up less): {(cpu - idle_cpu) * 1000 / len(mails):.1f} ms"
    )
    return seconds


# --- instructions per mail (callgrind) ------------------------------------------------------------------------

WARM_UP = 5  # mails before any is counted: imports, caches, the license's first mail (marks its inbox used)


def _instruction_mails(first: int, count: int) -> list[bytes]:
    # a sender and a domain of its own per mail: every one gets its acknowledgement (no storm limit applies)
    tag = f"{os.getpid()}-{time.time_ns()}"
    return [mail(n, tag, sender=f"customer{n}@c{n}-{tag}.example.com") for n in range(first, first + count)]


def _deliver_all(address: str, raws) -> None:
    from templates_app.inbound import smtp

    for raw in raws:
        reply = smtp._in_thread(smtp._deliver, raw, [address], "bounces@example.com")
        assert reply == smtp.OK, reply


def _count_only(count: int) -> None:
    """Under callgrind: a fresh license, the warm-up, then `count` mails (built before they are counted)."""
    from cpu import _await_instrumentation

    license = account_services.license_create(owner_email=f"bench-mail-{time.time_ns()}@example.com")
    address = license_address(license.pk)
    _deliver_all(address, _instruction_mails(0, WARM_UP))
    raws = _instruction_mails(WARM_UP, count)
    # every run's mails start from the same collector state, as in a listener that has served a while (see
    # "The collector" in bench/cpu.py: a full collection left pending by the warm-up fell inside the counted
    # mails or not, ~55 M instructions, 2-3 M per mail over 20)
    gc.collect()
    _await_instrumentation()
    _deliver_all(address, raws)


def _statements_of_one_mail(show: bool) -> int:
    license = account_services.license_create(owner_email=f"bench-mail-{time.time_ns()}@example.com")
    address = license_address(license.pk)
    _deliver_all(address, _instruction_mails(0, WARM_UP))
    raws = _instruction_mails(WARM_UP, 1)
    with CaptureQueriesContext(connection) as queries:
        _deliver_all(address, raws)
    if show:
        for query in queries.captured_queries:
            print("   ", query["sql"][:300])
    return len(queries.captured_queries)


def _callgrind(count: int) -> int:
    """The instructions of `count` mails (bench/cpu.py's _callgrind: started uninstrumented, switched on after the
    warm-up with `callgrind_control -i on`)."""
    from cpu import _callgrind

    return _callgrind(["--count-only", f"mail:{count}"], __file__)


def count_instructions(args) -> None:
    counted = _callgrind

    statements = _statements_of_one_mail(args.sql)
    base = counted(0)
    spent = (counted(args.mails) - base) / args.mails
    print(
        f"mail in, new ticket with its acknowledgement: {spent / 1e6:.2f} M instructions, {statements} statements"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mails", type=int, default=400)
    parser.add_argument("--pipe-mails", type=int, default=100, help="process per mail is slow: fewer")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--processes", type=int, default=0, help="smtp_inbound's (default: its own)")
    parser.add_argument(
        "--licenses", type=int, default=1, help="spread the mails over this many licenses (default 1)"
    )
    parser.add_argument(
        "--own-senders",
        action="store_true",
        help="every mail from a sender and domain of its own: each gets its acknowledgement (no storm limit)",
    )
    parser.add_argument("--instructions", action="store_true", help="instructions per mail, under callgrind")
    parser.add_argument("--sql", action="store_true", help="with --instructions: print one mail's statements")
    parser.add_argument("--only", choices=["pipe", "handle", "smtp"], help="run one entrance only")
    parser.add_argument("--count-only", help=argparse.SUPPRESS)  # mail:N, the run under callgrind
    args = parser.parse_args()
    if args.count_only:
        return _count_only(int(args.count_only.rpartition(":")[2]))
    if args.instructions:
        return count_instructions(args)
    licenses = [
        account_services.license_create(owner_email=f"bench-mail-{time.time_ns()}-{n}@example.com")
        for n in range(args.licenses)
    ]
    license, addresses = licenses[0], [license_address(each.pk) for each in licenses]
    print(
        f"licenses {', '.join(str(each.pk) for each in licenses)}, {os.cpu_count()} CPUs, "
        f"concurrency {args.concurrency}, "
        f"load average {' '.join(f'{n:.1f}' for n in os.getloadavg())}"
    )
    runs = [
        ("receive_mail, a process per mail (MTA pipe)", args.pipe_mails,
         lambda m: bench_pipe(m, args.concurrency)),
        ("receive_mail, handle() in one process", args.mails, lambda m: bench_in_process(m)),
        ("smtp_inbound (SMTP)", args.mails, lambda m: bench_smtp(m, args.concurrency, args.processes)),
    ]  # fmt: skip
    for name, count, run in runs:
        if args.only and not name.startswith(
            {"pipe": "receive_mail, a", "handle": "receive_mail, h"}.get(args.only, "smtp")
        ):
            continue
        tag = f"{os.getpid()}-{time.time_ns()}"
        mails = [
            (
                addresses[n % len(addresses)],
                mail(
                    n,
                    name.split()[0],
                    sender=f"customer{n}@c{n}-{tag}.example.com" if args.own_senders else "",
                ),
            )
            for n in range(count)
        ]
        with SearchProbe(license.pk) as probe:
            seconds = run(mails)
        report(name, count, seconds, probe)
    print(f"tickets in the licenses: {Ticket.objects.filter(license__in=licenses).count()}")
    print(f"load average {' '.join(f'{n:.1f}' for n in os.getloadavg())}")


if __name__ == "__main__":
    main()
