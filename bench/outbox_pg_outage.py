"""Deferred mail meets a PostgreSQL outage at its retry (issue 37 items 2 and 10), with real processes: a Celery
worker and beat (RedBeat) on PostgreSQL through a TCP proxy that this script cuts, Redis as the broker, and an
SMTP relay on loopback that answers 451 to the first try of each mail.

The relay defers COUNT mails; PostgreSQL is cut before their retries (30 s later) and stays away CUT seconds,
so the retries fail on the database; then it returns. Prints how long after its return every mail was sent,
and how many arrived twice.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_bench REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python bench/outbox_pg_outage.py        (the database migrated first)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")


class Relay:
    def __init__(self):
        self.arrived: Counter = Counter()
        self.deferred: set[str] = set()

    async def handle_DATA(self, server, session, envelope):
        from email import message_from_bytes, policy

        row = message_from_bytes(envelope.content, policy=policy.default)["X-HelpDesk-Message-ID"]
        if row not in self.deferred:
            self.deferred.add(row)
            return "451 4.3.0 Try again later"
        self.arrived[row] += 1
        return "250 Message accepted"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--cut", type=float, default=40.0, help="seconds PostgreSQL stays away")
    args = parser.parse_args()

    import django
    from aiosmtpd.controller import Controller

    django.setup()
    from django.conf import settings

    from accounts import services
    from templates_app import mail
    from templates_app.models import OutboundMessage
    from templates_app.rendering import Rendered
    from tests.embedded_helpers import _free_port
    from tests.tcp_proxy import TcpProxy

    relay = Relay()
    controller = Controller(relay, hostname="127.0.0.1", port=_free_port())
    controller.start()
    database = settings.DATABASES["default"]
    proxy = TcpProxy(database["HOST"] or "127.0.0.1", int(database["PORT"] or 5432))
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"postgres://{database['USER']}@127.0.0.1:{proxy.port}/{database['NAME']}",
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(controller.port),
    )
    folder = Path(tempfile.mkdtemp())
    env["HELPDESK_VAR_DIR"] = str(folder)
    log = (folder / "processes.log").open("w")
    celery = [sys.executable, "-m", "celery", "-A", "helpdesk"]
    processes = [
        subprocess.Popen([*celery, "worker", "--loglevel=INFO", "--concurrency=2"], cwd=ROOT, env=env,
                         stdout=log, stderr=subprocess.STDOUT),
        subprocess.Popen([*celery, "beat", "--loglevel=INFO"], cwd=ROOT, env=env, stdout=log,
                         stderr=subprocess.STDOUT),
    ]  # fmt: skip
    try:
        license = services.license_create(owner_email=f"bench-{time.time()}@example.com")
        rows = [
            mail.message_queue(
                license=license, kind="test", key=f"outage-{i}", to=f"c{i}@example.com", subject=f"S {i}",
                rendered=Rendered(text="T", html=""),
            ).pk
            for i in range(args.count)
        ]  # fmt: skip
        deadline = time.monotonic() + 60
        while len(relay.deferred & {str(pk) for pk in rows}) < args.count:
            assert time.monotonic() < deadline, "the first tries did not all reach the relay"
            time.sleep(0.2)
        proxy.cut()
        time.sleep(args.cut)
        proxy.restore()
        back = time.monotonic()
        wanted = {str(pk) for pk in rows}
        stranded = None
        while set(relay.arrived) & wanted != wanted:
            if time.monotonic() - back > 300:
                stranded = OutboundMessage.objects.filter(pk__in=rows).exclude(status="sent").count()
                break
            time.sleep(0.5)
        took = time.monotonic() - back
        time.sleep(2)
        arrived = {row: relay.arrived[row] for row in wanted}
        print(f"{args.count} mails deferred (451), PostgreSQL cut {args.cut:.0f} s over their retries: "
              f"{sum(1 for n in arrived.values() if n)} sent {took:.0f} s after its return, "
              f"{sum(n - 1 for n in arrived.values() if n > 1)} duplicated, stranded: {stranded or 0}")  # fmt: skip
        text = (folder / "processes.log").read_text()
        print(f"worker/beat: {text.count('OperationalError')} OperationalError lines, beat alive: "
              f"{processes[1].poll() is None}")  # fmt: skip
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
        controller.stop()
        proxy.close()
        log.close()


if __name__ == "__main__":
    main()
