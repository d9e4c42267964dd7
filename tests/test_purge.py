"""The purge of spam (60 days) and trash (30 days): boundaries, batches, re-checks, the lock, files, records."""

import io
import logging
from datetime import datetime, timedelta
from unittest import mock

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection

from accounts.models import Attachment, AttachmentTransaction
from tests.factories import AccountFactory, LicenseFactory
from tests.purge_helpers import attach_file, make_ticket
from tickets import purge, services
from tickets.models import Message, Ticket, TicketEvent
from tickets.models_purge import PurgedFile, PurgeRun
from tickets.tasks import purge_expired_tickets
from tickets.totals import keys as search_keys
from tickets.totals import writing as search_writes

NOW = datetime.fromisoformat("2026-06-15T12:00:00+00:00")
SECOND = timedelta(seconds=1)


@pytest.fixture
def frozen(time_machine):
    time_machine.move_to(NOW, tick=False)
    return NOW


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def exists(ticket) -> bool:
    return Ticket.objects.filter(pk=ticket.pk).exists()


# --- the rule ---------------------------------------------------------------------------------------------


def test_spam_purges_at_exactly_60_days_and_not_a_second_before(license, frozen):
    # given
    young = make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=60) + SECOND)
    due = make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=60))
    # when
    result = purge.purge_expired()
    # then
    assert exists(young)
    assert not exists(due)
    assert result.counts == {license.pk: {"spam": 1, "trash": 0}}


def test_trash_purges_at_exactly_30_days_and_not_a_second_before(license, frozen):
    # given
    young = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=30) + SECOND)
    due = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=30))
    spam_of_the_same_age = make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=30))
    # when
    result = purge.purge_expired()
    # then
    assert exists(young)
    assert not exists(due)
    assert exists(spam_of_the_same_age)
    assert result.counts == {license.pk: {"spam": 0, "trash": 1}}


@pytest.mark.parametrize("silo", ["tickets", "archive"])
def test_tickets_and_archive_never_purge_however_old(license, frozen, silo):
    # given
    ancient = make_ticket(license, silo=silo, updated_at=NOW - timedelta(days=5000))
    # when
    result = purge.purge_expired()
    # then
    assert exists(ancient)
    assert Message.objects.filter(ticket=ancient).count() == 2
    assert result.tickets_deleted == 0


def test_retention_days_come_from_settings(license, frozen, settings):
    # given
    settings.PURGE_TRASH_DAYS = 7
    due = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=7))
    young = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=7) + SECOND)
    # when
    purge.purge_expired()
    # then
    assert not exists(due)
    assert exists(young)


def test_the_clock_moving_past_the_boundary_makes_a_ticket_due(license, time_machine):
    # given
    time_machine.move_to(NOW, tick=False)
    ticket = make_ticket(license, silo="trash", updated_at=NOW)
    time_machine.move_to(NOW + timedelta(days=30) - SECOND, tick=False)
    purge.purge_expired()
    assert exists(ticket)
    # when
    time_machine.move_to(NOW + timedelta(days=30), tick=False)
    purge.purge_expired()
    # then
    assert not exists(ticket)


# --- what goes with a ticket, and what stays ---------------------------------------------------------------


def test_messages_tags_teams_and_attachments_go_with_the_ticket(
    license, frozen, django_capture_on_commit_callbacks
):
    # given
    due = make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=61))
    kept = make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=59))
    gone_file, kept_file = attach_file(due), attach_file(kept)
    storage = Attachment._meta.get_field("file").storage
    # when
    with django_capture_on_commit_callbacks(execute=True):
        result = purge.purge_expired()
    # then
    assert not Message.objects.filter(ticket_id=due.pk).exists()
    assert not TicketEvent.objects.filter(ticket_id=due.pk).exists()
    assert not Attachment.objects.filter(pk=gone_file.pk).exists()
    assert not AttachmentTransaction.objects.filter(pk=gone_file.transaction_id).exists()
    assert not Ticket.tags.through.objects.filter(ticket_id=due.pk).exists()
    assert not Ticket.teams.through.objects.filter(ticket_id=due.pk).exists()
    assert not storage.exists(gone_file.file.name)
    # and the other ticket keeps everything
    assert Message.objects.filter(ticket_id=kept.pk).count() == 3
    assert TicketEvent.objects.filter(ticket_id=kept.pk, type="message").count() == 3
    assert storage.exists(kept_file.file.name)
    assert kept.tags.count() == 1
    assert PurgedFile.objects.count() == 0
    assert PurgeRun.objects.get(pk=result.run.pk).files_deleted == 1


def test_a_file_is_deleted_only_after_the_commit(license, frozen, django_capture_on_commit_callbacks):
    # given
    due = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    attachment = attach_file(due)
    storage = Attachment._meta.get_field("file").storage
    # when: the batch's transaction has not committed yet (the callbacks are held back)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        purge.purge_expired()
    # then
    assert callbacks
    assert storage.exists(attachment.file.name)
    assert list(PurgedFile.objects.values_list("name", flat=True)) == [attachment.file.name]


def test_a_run_killed_between_commit_and_file_deletion_leaves_the_files_to_the_next_run(
    license, frozen, django_capture_on_commit_callbacks
):
    # given: the process died after the commit, before its on_commit deleted the file
    attachment = attach_file(make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31)))
    storage = Attachment._meta.get_field("file").storage
    with django_capture_on_commit_callbacks(execute=False):
        purge.purge_expired()
    assert storage.exists(attachment.file.name)
    # when
    with django_capture_on_commit_callbacks(execute=True):
        result = purge.purge_expired()
    # then
    assert not storage.exists(attachment.file.name)
    assert PurgedFile.objects.count() == 0
    assert PurgeRun.objects.get(pk=result.run.pk).files_deleted == 1


def test_a_batch_that_fails_midway_is_rolled_back_whole_and_the_next_run_finishes(
    license, frozen, django_capture_on_commit_callbacks
):
    # given
    due = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    attachment = attach_file(due)
    storage = Attachment._meta.get_field("file").storage
    # when: the batch fails after its deletes, before its commit
    with (
        mock.patch("tickets.totals.writing._bump", side_effect=RuntimeError("killed")),
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
    ):
        purge.purge_expired()
    # then: nothing of the batch is gone
    assert exists(due)
    assert Message.objects.filter(ticket_id=due.pk).count() == 3
    assert Attachment.objects.filter(pk=attachment.pk).exists()
    assert storage.exists(attachment.file.name)
    assert PurgeRun.objects.get().status == "failed"
    # and the next run does the job
    with django_capture_on_commit_callbacks(execute=True):
        purge.purge_expired()
    assert not exists(due)
    assert not storage.exists(attachment.file.name)
    assert cache.get(purge.LOCK_KEY) is None


def test_a_child_of_a_purged_parent_stays_and_only_loses_the_link(license, frozen):
    # given
    parent = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=40))
    child = make_ticket(license, silo="tickets", updated_at=NOW - timedelta(days=45), parent=parent)
    # when
    purge.purge_expired()
    # then
    child.refresh_from_db()
    assert not exists(parent)
    assert child.parent_id is None
    assert child.silo == "tickets"
    assert child.updated_at == NOW - timedelta(days=45)
    assert Message.objects.filter(ticket=child).count() == 2


def test_a_purged_child_leaves_its_parent_alone(license, frozen):
    # given
    parent = make_ticket(license, silo="tickets", updated_at=NOW - timedelta(days=90))
    child = make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=90), parent=parent)
    # when
    purge.purge_expired()
    # then
    assert not exists(child)
    assert exists(parent)
    assert Message.objects.filter(ticket=parent).count() == 2


def test_a_parent_and_its_child_due_together_both_go(license, frozen):
    parent = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=40))
    child = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=40), parent=parent)
    purge.purge_expired()
    assert not exists(parent)
    assert not exists(child)


def test_the_purge_knows_every_relation_to_a_ticket():
    # A new foreign key to Ticket (or to a ticket's attachment transaction) must be handled in
    # tickets.purge._delete_license_rows; until it is, the database refuses the batch at commit.
    relations = {(rel.related_model._meta.label, rel.field.name) for rel in Ticket._meta.related_objects}
    assert relations == {
        ("tickets.Message", "ticket"),
        ("tickets.TicketEvent", "ticket"),  # deleted before the messages it points at
        ("tickets.Ticket", "parent"),
        ("tickets.TicketTeam", "ticket"),  # the teams relation's link model, deleted with the other links
        ("tickets.TicketMetrics", "ticket"),  # the reports' rows (tickets/reports/)
        ("tickets.TicketResolution", "ticket"),
    }
    assert {field.name for field in Ticket._meta.many_to_many} == {"teams", "tags", "followers"}
    txn_relations = {
        (rel.related_model._meta.label, rel.field.name) for rel in AttachmentTransaction._meta.related_objects
    }
    assert txn_relations <= {("accounts.Attachment", "transaction"), ("tickets.Message", "transaction")}


@pytest.mark.skipif(not apps.is_installed("audit"), reason="no audit app")
def test_audit_entries_are_never_touched(license, frozen):
    try:
        entry_model = apps.get_model("audit", "AuditEntry")
    except LookupError:
        pytest.skip("the audit app has no AuditEntry on this branch")
    # given
    make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    before = list(entry_model.objects.order_by("pk").values())
    # when
    purge.purge_expired()
    # then
    assert list(entry_model.objects.order_by("pk").values()) == before


# --- batches, re-checks and the lock ------------------------------------------------------------------------


def test_batches_cross_licenses_until_nothing_is_due(license, frozen, settings):
    # given: 3 licenses, 11 due tickets, batches of 3
    settings.PURGE_BATCH_SIZE = 3
    second, third = LicenseFactory(company_name="Second"), LicenseFactory(company_name="Third")
    plan = {license: (3, 2), second: (0, 4), third: (1, 1)}
    for lic, (spam, trash) in plan.items():
        for _ in range(spam):
            make_ticket(lic, silo="spam", updated_at=NOW - timedelta(days=61))
        for _ in range(trash):
            make_ticket(lic, silo="trash", updated_at=NOW - timedelta(days=31))
        make_ticket(lic, silo="trash", updated_at=NOW - timedelta(days=29))
    batches = []
    # when
    with mock.patch.object(purge, "_before_batch", side_effect=lambda ids: batches.append(len(ids))):
        result = purge.purge_expired()
    # then
    assert max(batches) == 3 and len(batches) >= 4
    assert result.counts == {
        license.pk: {"spam": 3, "trash": 2},
        second.pk: {"spam": 0, "trash": 4},
        third.pk: {"spam": 1, "trash": 1},
    }
    assert Ticket.objects.count() == 3  # the young trash of each license
    run = PurgeRun.objects.get()
    assert (run.status, run.tickets_deleted, run.trigger) == ("finished", 11, "schedule")
    assert run.counts[str(second.pk)]["trash"] == 4
    assert purge.count_eligible(purge.cutoffs()) == 0


def test_a_ticket_restored_or_updated_between_selection_and_deletion_survives(license, frozen, settings):
    # given
    settings.PURGE_BATCH_SIZE = 10
    restored = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    moved_to_spam = make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    others = [make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31)) for _ in range(3)]

    def meanwhile(ids):
        assert restored.pk in ids and moved_to_spam.pk in ids
        services.ticket_update(ticket=restored, silo="tickets")
        services.ticket_update(ticket=moved_to_spam, silo="spam")

    # when
    with mock.patch.object(purge, "_before_batch", side_effect=meanwhile):
        result = purge.purge_expired()
    # then
    assert exists(restored) and exists(moved_to_spam)
    assert Message.objects.filter(ticket=restored).count() == 2
    assert not any(exists(t) for t in others)
    assert result.counts == {license.pk: {"spam": 0, "trash": 3}}


def test_a_purge_started_while_one_runs_does_nothing(license, frozen):
    # given
    tickets = [make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=70)) for _ in range(3)]
    second_runs = []
    # when
    with mock.patch.object(
        purge, "_before_batch", side_effect=lambda ids: second_runs.append(purge.purge_expired())
    ):
        first = purge.purge_expired()
    # then
    assert [r.skipped for r in second_runs] == [True]
    assert first.tickets_deleted == 3
    assert not any(exists(t) for t in tickets)
    assert PurgeRun.objects.count() == 1
    # and the lock is free again
    assert purge.purge_expired().skipped is False


def test_the_lock_is_released_only_by_its_owner(db):
    # given
    mine = purge.PurgeLock(60)
    assert mine.acquire()
    theirs = purge.PurgeLock(60)
    # when
    assert not theirs.acquire()
    theirs.release()
    assert not theirs.renew()
    # then
    assert cache.get(purge.LOCK_KEY) == mine.token
    assert mine.renew()
    mine.release()
    assert cache.get(purge.LOCK_KEY) is None


def test_a_run_that_never_finished_is_marked_interrupted_by_the_next(license, frozen):
    # given
    dead = PurgeRun.objects.create(spam_cutoff=NOW, trash_cutoff=NOW, status="running")
    # when
    purge.purge_expired()
    # then
    dead.refresh_from_db()
    assert dead.status == "interrupted"


def test_a_run_logs_per_license_counts_and_time(license, frozen, caplog):
    make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=61))
    make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    with caplog.at_level(logging.INFO, logger="tickets.purge"):
        result = purge.purge_expired()
    messages = [r.getMessage() for r in caplog.records if r.name == "tickets.purge"]
    assert f"purge run {result.run.pk}: license {license.pk} lost 1 spam and 1 trash tickets" in "\n".join(
        messages
    )
    assert any(
        m.startswith(f"purge run {result.run.pk} finished in ") and "2 tickets in 1 licenses" in m
        for m in messages
    )


# --- the task, the command, the admin, the schedule ---------------------------------------------------------


def test_the_task_purges_and_records_a_scheduled_run(license, frozen):
    make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=61))
    summary = purge_expired_tickets.apply().get()
    assert summary["ticketsDeleted"] == 1
    assert PurgeRun.objects.get().trigger == "schedule"


def test_dry_run_shows_per_license_what_each_silo_would_lose_and_deletes_nothing(license, frozen):
    # given
    other = LicenseFactory(company_name="Globex")
    for _ in range(2):
        make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=61))
    make_ticket(other, silo="trash", updated_at=NOW - timedelta(days=31))
    make_ticket(other, silo="archive", updated_at=NOW - timedelta(days=999))
    out = io.StringIO()
    # when
    call_command("purge_tickets", "--dry-run", stdout=out, stderr=io.StringIO())
    # then
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "Spam updated on or before 2026-04-16 12:00:00 UTC (60 days), "
        "trash on or before 2026-05-16 12:00:00 UTC (30 days)."
    )
    table = [line.split() for line in lines[1:5]]
    assert table == [
        ["license", "spam", "trash"],
        [*str(license).split(), "2", "0"],
        [*str(other).split(), "0", "1"],
        ["total", "2", "1"],
    ]
    assert lines[5].startswith("Dry run: nothing was deleted")
    assert Ticket.objects.count() == 4
    assert PurgeRun.objects.count() == 0


def test_dry_run_shows_a_progress_bar_for_a_run_of_several_batches(license, frozen, settings):
    settings.PURGE_BATCH_SIZE = 2
    for _ in range(5):
        make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=61))
    err = io.StringIO()
    call_command("purge_tickets", "--dry-run", stdout=io.StringIO(), stderr=err)
    assert "5/5" in err.getvalue()


def test_the_command_without_dry_run_purges_now_and_reports(license, frozen):
    # given
    make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    out = io.StringIO()
    # when
    call_command("purge_tickets", stdout=out, stderr=io.StringIO())
    # then
    run = PurgeRun.objects.get()
    assert run.trigger == "command"
    assert Ticket.objects.count() == 0
    text = out.getvalue()
    assert [*str(license).split(), "0", "1"] in [line.split() for line in text.splitlines()]
    assert f"Purge run {run.pk} finished: deleted 1 tickets and 0 attachment files in " in text


def test_the_command_refuses_while_another_purge_runs(license, frozen):
    make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    cache.add(purge.LOCK_KEY, 1, 60)
    with pytest.raises(CommandError, match="Another purge is running"):
        call_command("purge_tickets", stdout=io.StringIO(), stderr=io.StringIO())
    assert Ticket.objects.count() == 1


def test_the_admin_shows_runs_read_only(client, license, frozen):
    # given
    make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    run = purge.purge_expired().run
    admin_user = AccountFactory(email="admin@example.com", is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    # when
    listing = client.get("/admin/tickets/purgerun/")
    detail = client.get(f"/admin/tickets/purgerun/{run.pk}/change/")
    add = client.get("/admin/tickets/purgerun/add/")
    # then
    assert listing.status_code == 200
    assert detail.status_code == 200
    assert f"license {license.pk}: 0 spam, 1 trash" in detail.content.decode()
    assert add.status_code == 403


def test_beat_runs_the_purge_hourly_at_minute_17():
    from celery.schedules import crontab

    entry = django_settings.CELERY_BEAT_SCHEDULE["purge-expired-tickets"]
    assert entry["task"] == "tickets.tasks.purge_expired_tickets"
    assert entry["schedule"] == crontab(minute=17)


@pytest.mark.redis
def test_with_redis_one_beat_at_a_time_through_redbeat():
    from django.utils.module_loading import import_string
    from redbeat import RedBeatScheduler

    # helpdesk.beat.Scheduler: RedBeat's lock, surviving a Redis outage (tests/test_beat_outage.py)
    assert issubclass(import_string(django_settings.CELERY_BEAT_SCHEDULER), RedBeatScheduler)


def test_the_purge_has_its_indexes(db):
    with connection.cursor() as cursor:
        names = {
            index
            for index, info in connection.introspection.get_constraints(cursor, "tickets_ticket").items()
            if info["index"]
        }
    assert "ticket_purge_silo_updated" in names
    assert "ticket_parent_fk" in names
    with connection.cursor() as cursor:
        message_indexes = connection.introspection.get_constraints(cursor, "tickets_message")
    assert message_indexes["message_ticket_fk"]["columns"] == ["ticket_id"]
    with connection.cursor() as cursor:
        transaction_indexes = connection.introspection.get_constraints(
            cursor, "accounts_attachmenttransaction"
        )
    assert transaction_indexes["txn_license_bound"]["columns"] == ["license_id", "bound_type", "bound_id"]


def test_a_run_that_fails_midway_records_exactly_what_its_committed_batches_deleted(
    license, frozen, settings
):
    # given: batches of one; the second batch fails
    settings.PURGE_BATCH_SIZE = 1
    first, second = (
        make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31 + i)) for i in (1, 0)
    )
    calls = []
    bump = search_writes._bump

    def fail_the_second_batch(license_id, **kwargs):
        calls.append(license_id)
        if len(calls) == 2:
            raise RuntimeError("killed")
        return bump(license_id, **kwargs)

    # when
    with (
        mock.patch("tickets.totals.writing._bump", side_effect=fail_the_second_batch),
        pytest.raises(RuntimeError),
    ):
        purge.purge_expired()
    # then
    run = PurgeRun.objects.get()
    assert (run.status, run.tickets_deleted) == ("failed", 1)
    assert run.counts[str(license.pk)]["trash"] == 1
    assert not exists(first) and exists(second)


@pytest.mark.redis
def test_with_redis_the_lock_is_a_redis_key_with_an_expiry_released_atomically_by_its_owner(db):
    # given
    lock = purge.PurgeLock(60)
    client, key = lock._redis()
    assert client is not None
    # when
    assert lock.acquire()
    # then
    assert client.get(key) == str(lock.token).encode()
    assert 0 < client.ttl(key) <= 60
    assert purge.PurgeLock(60).renew() is False
    purge.PurgeLock(60).release()
    assert client.get(key) is not None
    lock.release()
    assert client.get(key) is None


def test_a_file_the_storage_fails_to_delete_stays_listed_for_the_next_run(
    license, frozen, django_capture_on_commit_callbacks
):
    # given
    attachment = attach_file(make_ticket(license, silo="spam", updated_at=NOW - timedelta(days=61)))
    storage = Attachment._meta.get_field("file").storage
    # when: the storage is down during the run
    with (
        mock.patch("django.core.files.storage.FileSystemStorage.delete", side_effect=OSError("storage down")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        purge.purge_expired()
    # then
    assert storage.exists(attachment.file.name)
    assert list(PurgedFile.objects.values_list("name", flat=True)) == [attachment.file.name]
    # and the next run deletes it
    purge.purge_expired()
    assert not storage.exists(attachment.file.name)
    assert not PurgedFile.objects.exists()


def test_a_purge_invalidates_the_cached_search_totals_of_each_license_it_touched(license, frozen):
    other = LicenseFactory()
    make_ticket(license, silo="trash", updated_at=NOW - timedelta(days=31))
    before = search_keys.generation(license.pk), search_keys.generation(other.pk)
    purge.purge_expired()
    assert search_keys.generation(license.pk) != before[0]
    assert search_keys.generation(other.pk) == before[1]
