"""Scale out (issue 35): two web instances, two Celery workers and one beat on one PostgreSQL primary with a
streaming replica (tests/replica_helpers.py: initdb + pg_basebackup -R, on loopback) and Redis; 500 API writes
spread over both web instances, 200 inbound mails over two SMTP listeners; then checks what the promises say:

- every outbound mail row arrived at the relay exactly once (by our row ID), and every webhook delivery row at
  the receiver exactly once (X-Webhook-ID); none lost, none twice;
- autoassignment stayed balanced: the open tickets of the eligible agents differ by at most one;
- totals are exact: each search's X-Total-Results (read on the replica once it has caught up) equals a count on the
  primary; the replica's lag during the run is printed;
- 0 server errors.

    .venv/bin/python bench/scale_out.py                     # Redis database 12 on 127.0.0.1:6379 (flushed)
    .venv/bin/python bench/scale_out.py --writes 500 --mails 200 --redis redis://127.0.0.1:6379/12
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import os
import re
import smtplib
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.embedded_helpers import Sink, _free_port, wait  # noqa: E402
from tests.replica_helpers import StreamingPair, server_bindir  # noqa: E402
from tests.webhook_helpers import Receiver  # noqa: E402

AGENTS = """
from accounts import services
from accounts.models import ROLE_NORMAL, STATUS_ACTIVE, Account, Agent, AutoassignmentMembership, License, Team
license = License.objects.get()
team = Team.objects.get(license=license)
owner = Agent.objects.get(license=license)
owner.autoassignment = False
owner.save()
for n in range({count}):
    account = Account.objects.create_user(email=f"agent{{n}}@example.com", name=f"Agent {{n}}")
    agent = Agent.objects.create(license=license, account=account, email=account.email, name=account.name,
                                 roles=[ROLE_NORMAL], status=STATUS_ACTIVE, autoassignment=True)
    agent.teams.add(team)
    AutoassignmentMembership.objects.create(team=team, agent=agent)
print("TEAM=" + str(team.pk))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--mails", type=int, default=200)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8, help="concurrent API clients")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    args = parser.parse_args()

    import redis

    redis.Redis.from_url(args.redis).flushdb()
    pair = StreamingPair(server_bindir()).start()
    folder = Path(tempfile.mkdtemp(prefix="helpdesk-scale-"))
    sink = Sink()
    from aiosmtpd.controller import Controller

    relay = Controller(sink, hostname="127.0.0.1", port=_free_port())
    relay.start()
    receiver = Receiver().start()
    processes: list[subprocess.Popen] = []
    log = (folder / "processes.log").open("w")
    try:
        pair.primary.execute("CREATE DATABASE helpdesk")
        pair.wait_until_replayed()
        web_ports, smtp_ports = [_free_port(), _free_port()], [_free_port(), _free_port()]
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)},
            "DATABASE_URL": pair.primary.url("helpdesk"),
            "DATABASE_REPLICA_URLS": pair.replica.url("helpdesk"),
            "REDIS_URL": args.redis,
            "HELPDESK_VAR_DIR": str(folder),
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(relay.port),
            "WEBHOOKS_ALLOW_PRIVATE": "true",
            "NOTIFICATION_BATCH_SECONDS": "1",
            "HELPDESK_APP_URL": f"http://127.0.0.1:{web_ports[0]}",
            "DEBUG": "true",
            "RATE_LIMIT_PER_TOKEN": "0",  # one token makes every write here: the limits are not what is measured
            "RATE_LIMIT_PER_LICENSE": "0",
        }

        def manage(*command: str) -> str:
            done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True,
                                  text=True)  # fmt: skip
            if done.returncode:
                raise SystemExit(done.stderr)
            return done.stdout

        manage("migrate", "--noinput", "-v0")
        demo = manage("demo_license", "--base-url", env["HELPDESK_APP_URL"])
        account, token = re.search(r"ACCOUNT_ID=(\S+) TOKEN=(\S+)", demo).groups()
        address = re.search(r"Its mail address .*: (\S+@\S+)", demo).group(1)
        manage("shell", "-c", AGENTS.format(count=args.agents))
        celery = [sys.executable, "-m", "celery", "-A", "helpdesk"]
        commands = [
            [sys.executable, "-m", "gunicorn", "helpdesk.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "2",
             "--threads", "2", "--log-level", "warning"] for port in web_ports
        ] + [
            [*celery, "worker", "--loglevel=WARNING", "--concurrency=2", "-n", f"worker{n}@%h"] for n in (1, 2)
        ] + [[*celery, "beat", "--loglevel=WARNING"]] + [
            [sys.executable, "manage.py", "smtp_inbound", "--host", "127.0.0.1", "--port", str(port)]
            for port in smtp_ports
        ]  # fmt: skip
        for command in commands:
            processes.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))  # fmt: skip
        basic = base64.b64encode(f"{account}:{token}".encode()).decode()
        clients = [
            httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Basic {basic}"},
                         timeout=60) for port in web_ports
        ]  # fmt: skip

        def up():
            try:
                return all(client.get("/v1/licenses").status_code == 200 for client in clients)
            except httpx.HTTPError:
                return False

        wait(up, 60, "the web instances")
        for event_type in ("tickets.create", "tickets.events.message"):
            clients[0].post(
                "/v1/webhooks", json={"name": event_type, "url": receiver.url, "eventType": event_type}
            )

        lag: list[int] = []
        stop = threading.Event()

        def watch_lag():
            while not stop.is_set():
                (primary,) = pair.primary.execute("SELECT pg_current_wal_insert_lsn()::text")[0]
                (diff,) = pair.replica.execute(f"SELECT '{primary}'::pg_lsn - pg_last_wal_replay_lsn()")[0]
                lag.append(max(int(diff), 0))  # (negative: replayed between the two reads)
                time.sleep(0.2)

        watcher = threading.Thread(target=watch_lag, daemon=True)
        watcher.start()
        statuses: Counter = Counter()
        tickets: list[str] = []
        lock = threading.Lock()

        def write(n: int) -> None:
            client = clients[n % 2]
            if n % 2 == 0 or not tickets:  # half creates, half agent replies on a ticket made earlier
                body = {"subject": f"Order {n}", "requester": {"email": f"c{n}@example.com"},
                        "message": {"text": "Where is my order?"}}  # fmt: skip
                response = client.post("/v1/tickets", json=body)
                if response.status_code == 201:
                    with lock:
                        tickets.append(response.json()["ID"])
            else:
                with lock:
                    ticket = tickets[n % len(tickets)]
                response = client.patch(f"/v1/tickets/{ticket}", json={"message": {"text": f"Reply {n}"}})
            with lock:
                statuses[response.status_code] += 1
            search = client.get("/v1/tickets", params={"status": "open"})  # a read after the write
            with lock:
                statuses[search.status_code] += 1

        def mail(n: int) -> None:
            message = (f"From: <m{n}@example.com>\r\nTo: {address}\r\nSubject: Help {n}\r\n"
                       f"Message-ID: <in-{n}@example.com>\r\n\r\nMy order {n} is late.\r\n")  # fmt: skip
            with smtplib.SMTP("127.0.0.1", smtp_ports[n % 2], timeout=60) as smtp:
                smtp.sendmail(f"m{n}@example.com", [address], message.encode())

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            jobs = [pool.submit(write, n) for n in range(args.writes)]
            jobs += [pool.submit(mail, n) for n in range(args.mails)]
            for job in jobs:
                job.result()
        took = time.monotonic() - started

        def drained():
            rows = (
                pair.primary.execute(
                    "SELECT count(*) FROM templates_app_outboundmessage WHERE status IN ('pending', 'sending')",
                    "helpdesk",
                )[0][0]
                + pair.primary.execute(
                    "SELECT count(*) FROM tickets_webhookdelivery WHERE status = 'pending'", "helpdesk"
                )[0][0]
            )
            return rows == 0

        wait(drained, 600, "the outbox and the webhook deliveries to drain")
        time.sleep(3)
        stop.set()
        mails = dict(pair.primary.execute(
            "SELECT replace(id::text, '-', ''), status FROM templates_app_outboundmessage", "helpdesk"))  # fmt: skip
        hooks = dict(pair.primary.execute(
            "SELECT replace(id::text, '-', ''), status FROM tickets_webhookdelivery", "helpdesk"))  # fmt: skip
        arrived = Counter(value.replace("-", "") for value in sink.ids.elements())
        delivered = Counter(r.headers["X-Webhook-ID"].replace("-", "") for r in receiver.received)
        load = pair.primary.execute(
            "SELECT a.name, count(t.id) FROM accounts_agent a LEFT JOIN tickets_ticket t ON "
            "t.assignment_agent_id = a.id AND t.status IN ('open', 'pending') WHERE a.autoassignment "
            "GROUP BY a.name ORDER BY a.name",
            "helpdesk",
        )
        pair.wait_until_replayed()
        exact = []
        for params, sql in (
            ({}, "SELECT count(*) FROM tickets_ticket WHERE silo = 'tickets'"),
            (
                {"status": "open"},
                "SELECT count(*) FROM tickets_ticket WHERE silo = 'tickets' AND status = 'open'",
            ),
        ):
            total = int(clients[1].get("/v1/tickets", params=params).headers["X-Total-Results"])
            exact.append((params, total, pair.primary.execute(sql, "helpdesk")[0][0]))
        text = (folder / "processes.log").read_text()
        print(f"{args.writes} API writes (+ a search after each) and {args.mails} mails in {took:.1f} s, "
              f"{args.clients} clients over 2 web instances (2 processes x 2 threads each)")  # fmt: skip
        print(f"HTTP statuses: {dict(sorted(statuses.items()))}; server errors: "
              f"{sum(c for s, c in statuses.items() if s >= 500)}; Tracebacks in the logs: {text.count('Traceback')}")  # fmt: skip
        print(f"mail: {len(mails)} rows {dict(Counter(mails.values()))}, {sum(arrived.values())} arrived, "
              f"{sum(c - 1 for c in arrived.values() if c > 1)} duplicated, {len(set(mails) - set(arrived))} lost")  # fmt: skip
        print(f"webhooks: {len(hooks)} rows {dict(Counter(hooks.values()))}, {sum(delivered.values())} arrived, "
              f"{sum(c - 1 for c in delivered.values() if c > 1)} duplicated, {len(set(hooks) - set(delivered))} lost")  # fmt: skip
        counts = [n for _, n in load]
        print(f"autoassignment (open+pending per agent): {dict(load)}; spread {max(counts) - min(counts)}")
        for params, total, counted in exact:
            print(f"total {params or 'all'}: X-Total-Results {total}, counted on the primary {counted}: "
                  f"{'exact' if total == counted else 'WRONG'}")  # fmt: skip
        if lag:
            lag.sort()
            print(f"replica lag (bytes of WAL behind the primary, every 0.2 s): median {lag[len(lag) // 2]}, "
                  f"p95 {lag[int(len(lag) * 0.95)]}, max {lag[-1]}")  # fmt: skip
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
        relay.stop()
        receiver.stop()
        log.close()
        pair.close()


if __name__ == "__main__":
    main()
