"""The purge under real concurrency (PostgreSQL, threads) and as it really runs: Celery beat and a worker."""

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.utils import timezone

from tests.factories import LicenseFactory
from tests.purge_helpers import make_ticket
from tickets import purge, services
from tickets.models import Message, Ticket
from tickets.models_purge import PurgeRun

ROOT = Path(__file__).resolve().parents[1]
WAIT = 10  # seconds a thread waits for the other before the test gives up (never reached when correct)


def _in_thread(target, results, name):
    def run():
        try:
            results[name] = target()
        except BaseException as exc:  # surfaced by the test
            results[name] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


def _due_tickets(n, *licenses):
    old = timezone.now() - timedelta(days=61)
    return [make_ticket(licenses[i % len(licenses)], silo="spam", updated_at=old) for i in range(n)]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_purges_started_together_one_runs_and_each_ticket_goes_once(settings):
    # given
    settings.PURGE_BATCH_SIZE = 4
    tickets = _due_tickets(10, LicenseFactory(), LicenseFactory())
    other_done = threading.Event()

    def hold_until_the_other_returned(ids):
        other_done.wait(WAIT)

    def run_then_signal():
        try:
            return purge.purge_expired()
        finally:
            other_done.set()

    results = {}
    # when: whichever takes the lock waits (in its first batch) until the other one has returned
    with mock.patch.object(purge, "_before_batch", side_effect=hold_until_the_other_returned):
        threads = [_in_thread(run_then_signal, results, name) for name in ("a", "b")]
        for thread in threads:
            thread.join(WAIT * 3)
    # then
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    assert sorted(r.skipped for r in results.values()) == [False, True]
    assert sum(r.tickets_deleted for r in results.values()) == 10
    assert not Ticket.objects.filter(pk__in=[t.pk for t in tickets]).exists()
    assert PurgeRun.objects.get().tickets_deleted == 10


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_even_without_the_lock_two_overlapping_purges_delete_and_count_each_ticket_once(settings):
    # given: a lock that expired under a stalled run, so two runs go at once over the same batches
    settings.PURGE_BATCH_SIZE = 5
    tickets = _due_tickets(12, LicenseFactory(), LicenseFactory(), LicenseFactory())
    both_selected = threading.Barrier(2, timeout=WAIT)
    first_batch = threading.local()

    def select_the_same_batch_then_race(ids):
        if not getattr(first_batch, "seen", False):
            first_batch.seen = True
            both_selected.wait()

    results = {}
    # when
    with (
        mock.patch.object(purge.PurgeLock, "acquire", return_value=True),
        mock.patch.object(purge.PurgeLock, "renew", return_value=True),
        mock.patch.object(purge, "_before_batch", side_effect=select_the_same_batch_then_race),
    ):
        threads = [_in_thread(purge.purge_expired, results, name) for name in ("a", "b")]
        for thread in threads:
            thread.join(WAIT * 3)
    # then
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    assert sum(r.tickets_deleted for r in results.values()) == 12
    assert not Ticket.objects.filter(pk__in=[t.pk for t in tickets]).exists()
    assert sum(run.tickets_deleted for run in PurgeRun.objects.all()) == 12


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_ticket_being_restored_while_the_purge_runs_survives():
    # given
    license = LicenseFactory()
    old = timezone.now() - timedelta(days=31)
    restored = make_ticket(license, silo="trash", updated_at=old)
    others = [make_ticket(license, silo="trash", updated_at=old) for _ in range(3)]
    restoring, purged = threading.Event(), threading.Event()

    def restore_slowly():
        with transaction.atomic():
            services.ticket_update(ticket=restored, silo="tickets")  # holds the row lock until commit
            restoring.set()
            purged.wait(WAIT)
        return Ticket.objects.get(pk=restored.pk).silo

    results = {}
    thread = _in_thread(restore_slowly, results, "restore")
    assert restoring.wait(WAIT)
    # when
    try:
        result = purge.purge_expired()
    finally:
        purged.set()
        thread.join(WAIT)
    # then
    assert results["restore"] == "tickets"
    assert Message.objects.filter(ticket_id=restored.pk).count() == 2
    assert result.counts == {license.pk: {"spam": 0, "trash": 3}}
    assert not Ticket.objects.filter(pk__in=[t.pk for t in others]).exists()


# --- Celery beat and a worker, for real ---------------------------------------------------------------------


def _database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _start(args, log: Path, env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "helpdesk", *args],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_celery_beat_and_a_worker_purge_due_tickets_and_a_second_beat_stays_idle(tmp_path):
    # given: committed tickets (the subprocesses read the test database)
    license = LicenseFactory()
    due = [
        make_ticket(license, silo="spam", updated_at=timezone.now() - timedelta(days=61)),
        make_ticket(license, silo="trash", updated_at=timezone.now() - timedelta(days=31)),
    ]
    kept = [
        make_ticket(license, silo="trash", updated_at=timezone.now() - timedelta(days=29)),
        make_ticket(license, silo="archive", updated_at=timezone.now() - timedelta(days=400)),
    ]
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "HELPDESK_VAR_DIR": str(tmp_path),
        "PURGE_INTERVAL_SECONDS": "2",
        "DB_CONN_MAX_AGE": "0",
    }
    env.pop("TEST_DATABASE_NAME", None)
    logs = {name: tmp_path / f"{name}.log" for name in ("worker", "beat1", "beat2")}
    processes = [
        _start(
            ["worker", "--pool=solo", "--loglevel=INFO", "--without-mingle", "--without-gossip"],
            logs["worker"],
            env,
        ),
        _start(["beat", "--loglevel=INFO", f"--schedule={tmp_path / 'beat1'}"], logs["beat1"], env),
        _start(["beat", "--loglevel=INFO", f"--schedule={tmp_path / 'beat2'}"], logs["beat2"], env),
    ]
    try:
        # when: a functional wait (up to 60 s), not a timing assertion
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and Ticket.objects.filter(pk__in=[t.pk for t in due]).exists():
            assert all(p.poll() is None for p in processes), {n: p.read_text() for n, p in logs.items()}
            time.sleep(0.5)
        # then
        assert not Ticket.objects.filter(pk__in=[t.pk for t in due]).exists(), logs["worker"].read_text()
        assert Ticket.objects.filter(pk__in=[t.pk for t in kept]).count() == 2
        run = PurgeRun.objects.filter(tickets_deleted__gt=0).get()
        assert (run.trigger, run.counts[str(license.pk)]["spam"], run.counts[str(license.pk)]["trash"]) == (
            "schedule",
            1,
            1,
        )
        # read while both run: once the holder is stopped it releases the lock, and the other may take it
        # before its own stop (seen on a loaded box: both logs said "Acquired lock")
        beats = [logs["beat1"].read_text(), logs["beat2"].read_text()]
    finally:
        for process in processes:
            _stop(process)
    # exactly one beat held RedBeat's lock and sent the task; the other one waited
    assert sorted("beat: Acquired lock" in text for text in beats) == [False, True], beats
    assert sorted("Sending due task purge-expired-tickets" in text for text in beats) == [False, True], beats
    assert f"license {license.pk} lost 1 spam and 1 trash tickets" in logs["worker"].read_text()
