"""Tamper resistance of the audit log beyond the hash chain: the application's own SQL cannot delete, truncate
or rewrite entries (only a recorded retention purge removes them), and a chain cut at either end by someone
the database cannot stop (a superuser, who turns the triggers off) is caught against the published digests."""

import datetime
import importlib
import json
import logging

import pytest
import time_machine
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from accounts import services
from audit import chain, digests
from audit.models import AuditChainHead, AuditEntry, AuditPurge
from audit.services import audit_entries_purge
from audit.tasks import publish_audit_digests
from tests.audit_helpers import audit_triggers_disabled
from tests.factories import LicenseFactory

TRIGGERS = importlib.import_module("audit.migrations.0003_purge_records_and_triggers")
LONG_AGO = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=400)

REFUSED = {
    "DELETE": "DELETE FROM audit_auditentry WHERE license_id = {license}",
    "DELETE all": "DELETE FROM audit_auditentry",
    "UPDATE": "UPDATE audit_auditentry SET entity_name = 'forged' WHERE license_id = {license}",
    "DELETE purge records": "DELETE FROM audit_auditpurge",
    "UPDATE purge records": "UPDATE audit_auditpurge SET through_seq = through_seq + 1",
}
REFUSED_ON_POSTGRES = {
    "TRUNCATE": "TRUNCATE audit_auditentry",
    "TRUNCATE CASCADE": "TRUNCATE audit_auditentry CASCADE",
    "TRUNCATE purge records": "TRUNCATE audit_auditpurge",
    # 0002 let any session that set this delete entries.
    "the old purge setting": "SELECT set_config('helpdesk.audit_purge', 'on', true); "
    "DELETE FROM audit_auditentry WHERE license_id = {license}",
}


@pytest.fixture
def chained(db):
    """A license with a chain of several entries, the first ones written long ago."""
    with time_machine.travel(LONG_AGO, tick=False):
        license = LicenseFactory(company_name="Chained")
    for n in range(3):
        services.team_create(license=license, name=f"Chained {n}")
    return license


def entries_of(license):
    return list(AuditEntry.objects.filter(license=license).order_by("seq"))


def verify(license, capsys):
    try:
        call_command("verify_audit_chain", "--license", str(license.pk))
    except CommandError:
        return False, capsys.readouterr().err
    return True, capsys.readouterr().out


def refused_statements():
    cases = dict(REFUSED)
    if connection.vendor == "postgresql":
        cases |= REFUSED_ON_POSTGRES
    return cases


def test_the_applications_sql_can_neither_delete_nor_truncate_nor_rewrite_entries(chained, settings):
    # given a legitimate purge record, so that the purge records' own protection is tried too
    settings.AUDIT_RETENTION_DAYS = 30
    assert audit_entries_purge() > 0
    before = [(e.id, e.entity_name) for e in entries_of(chained)]
    purges = list(AuditPurge.objects.values_list("id", "cutoff"))
    for name, sql in refused_statements().items():
        # when the web process's connection tries it
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            for statement in sql.format(license=chained.pk).split("; "):
                cursor.execute(statement)
        # then nothing changed
        assert [(e.id, e.entity_name) for e in entries_of(chained)] == before, name
        assert list(AuditPurge.objects.values_list("id", "cutoff")) == purges, name
    assert chain.verify(chained.pk).ok


def test_a_cut_at_the_newest_end_with_the_head_rewound_is_caught_by_the_published_digest(chained, capsys):
    # given the chain's head published
    assert digests.publish() >= 1
    entries = entries_of(chained)
    kept = entries[-3]
    # when a superuser deletes the two newest entries and rewinds the head to the last one kept
    with audit_triggers_disabled():
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM audit_auditentry WHERE license_id = %s AND seq > %s", [chained.pk, kept.seq]
            )
        AuditChainHead.objects.filter(pk=chained.pk).update(seq=kept.seq, hash=kept.hash)
    # then the chain alone would still look whole, but the digest says it was longer
    assert chain.verify(chained.pk).ok
    ok, output = verify(chained, capsys)
    assert not ok
    assert (
        f"the chain ends at seq {kept.seq} but the digest published at" in output
        and f"shows its head at seq {entries[-1].seq} (entries were cut from the newest end)" in output
    ), output


def test_a_rewritten_newest_end_is_caught_by_the_published_digest(chained, capsys):
    # given the head published
    digests.publish()
    newest = entries_of(chained)[-1]
    # when a superuser replaces the newest entry by another one that links (with the default, empty key)
    with audit_triggers_disabled(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditentry WHERE id = %s", [newest.id.hex])
    newest.entity_name = "forged"
    newest.hash = chain.entry_hash(newest)
    with audit_triggers_disabled():
        AuditEntry.objects.bulk_create([newest])
        AuditChainHead.objects.filter(pk=chained.pk).update(hash=newest.hash)
    # then
    assert chain.verify(chained.pk).ok
    ok, output = verify(chained, capsys)
    assert not ok
    assert f"(seq {newest.seq}): its hash differs from the digest published at" in output


def test_a_cut_at_the_oldest_end_with_the_anchor_moved_is_caught(chained, capsys):
    # given the chain published
    digests.publish()
    entries = entries_of(chained)
    cut = entries[1]
    # when a superuser deletes the two oldest entries and moves the anchor to the last one cut
    with audit_triggers_disabled():
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM audit_auditentry WHERE license_id = %s AND seq <= %s", [chained.pk, cut.seq]
            )
        AuditChainHead.objects.filter(pk=chained.pk).update(anchor_seq=cut.seq, anchor_hash=cut.hash)
    # then
    ok, output = verify(chained, capsys)
    assert not ok
    assert (
        f"the chain head's anchor is seq {cut.seq} but the retention purges end at seq 0 "
        "(entries were cut at the oldest end without a purge)"
    ) in output


def test_a_cut_at_the_oldest_end_with_a_forged_purge_record_is_caught_by_the_published_digest(
    chained, capsys, settings
):
    # given the chain published at intervals, its oldest entries written long ago and the others recently
    settings.AUDIT_RETENTION_DAYS = 30
    digests.publish()
    recent = entries_of(chained)[-1]  # the head the first digest published
    services.team_create(license=chained, name="Later")
    digests.publish()
    # when a superuser cuts recent entries too and writes a purge record (with its trigger off) to explain it
    now = datetime.datetime.now(datetime.UTC)
    with audit_triggers_disabled():
        AuditPurge.objects.create(
            license_id=chained.pk, through_seq=recent.seq, through_hash=recent.hash, retention_days=30,
            cutoff=now - datetime.timedelta(days=30), purged_at=now, deleted=recent.seq,
        )  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM audit_auditentry WHERE license_id = %s AND seq <= %s", [chained.pk, recent.seq]
            )
        AuditChainHead.objects.filter(pk=chained.pk).update(anchor_seq=recent.seq, anchor_hash=recent.hash)
    # then the chain links from the forged anchor, but not with what was published
    assert chain.verify(chained.pk).ok
    ok, output = verify(chained, capsys)
    assert not ok
    assert "entry seq 1 (created" not in output  # the oldest entries were old enough to go...
    assert f"was cut by the purge through seq {recent.seq}" in output  # ...the recent ones were not


def test_a_legitimate_retention_purge_still_verifies_against_earlier_digests(chained, capsys, settings):
    # given digests published before and after a retention purge
    settings.AUDIT_RETENTION_DAYS = 30
    digests.publish()
    assert audit_entries_purge() > 0
    services.team_create(license=chained, name="After the purge")
    digests.publish()
    # when
    ok, output = verify(chained, capsys)
    # then
    anchor = AuditPurge.objects.filter(license_id=chained.pk).latest("through_seq").through_seq
    assert ok, output
    assert f"starts at seq {anchor + 1} after retention purges; 2 published digest(s) hold" in output


def test_digests_are_signed_lines_appended_only_when_the_head_moved(chained, settings, caplog):
    # given
    settings.AUDIT_HASH_KEY = "kept-outside-the-database"
    services.team_create(license=chained, name="Keyed")
    head = AuditChainHead.objects.get(pk=chained.pk)
    # when published twice without a change in between, then once after one
    with caplog.at_level(logging.INFO, logger="audit.digest"):
        first = digests.publish()
        again = digests.publish()
        services.team_create(license=chained, name="Moved")
        third = digests.publish()
    # then
    assert (first, again, third) == (1, 0, 1)
    lines = digests.path_of(chained.pk).read_text().splitlines()
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert (record["licenseID"], record["seq"], record["hash"]) == (chained.pk, head.seq, head.hash)
    assert record["sig"] == digests.signature(record)
    assert [r.getMessage() for r in caplog.records] == [f"audit digest {line}" for line in lines]


def test_an_edited_digest_file_fails_verification(chained, capsys):
    # given a published digest, edited afterwards to claim a shorter chain
    digests.publish()
    path = digests.path_of(chained.pk)
    record = json.loads(path.read_text())
    record["seq"] -= 1
    path.write_text(json.dumps(record) + "\n")
    # when
    ok, output = verify(chained, capsys)
    # then
    assert not ok
    assert "line 1: its signature does not match (the digest file was edited)" in output


def test_a_license_whose_whole_chain_vanished_is_caught_by_its_digests(chained, capsys):
    # given
    digests.publish()
    # when a superuser deletes the license's whole chain, head included
    with audit_triggers_disabled():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM audit_auditentry WHERE license_id = %s", [chained.pk])
        AuditChainHead.objects.filter(pk=chained.pk).delete()
    # then verifying every license still finds it
    with pytest.raises(CommandError):
        call_command("verify_audit_chain")
    assert f"license {chained.pk}: BROKEN at the chain ends at seq 0" in capsys.readouterr().err


@pytest.mark.postgres
def test_in_a_two_role_deployment_the_application_role_cannot_delete_but_the_purge_still_works(
    chained, settings
):
    # given an application role with the privileges `audit_db_grants` gives it (created in this test's
    # transaction, so it vanishes with it; named after the test database, as roles are per server)
    settings.AUDIT_RETENTION_DAYS = 30
    role = f"{connection.settings_dict['NAME']}_app"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" NOLOGIN')
    call_command("audit_db_grants", "--app-role", role, "--execute")
    with connection.cursor() as cursor:
        cursor.execute(f'SET LOCAL ROLE "{role}"')
    # when the application role tries, then the database refuses it the right itself
    for statement in [
        "DELETE FROM audit_auditentry",
        "TRUNCATE audit_auditentry",
        "UPDATE audit_auditpurge SET deleted = 0",
    ]:
        with (
            pytest.raises(DatabaseError, match="permission denied"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)
    with (
        pytest.raises(DatabaseError, match="must be owner"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("ALTER TABLE audit_auditentry DISABLE TRIGGER USER")
    # and the retention purge, run as the application role, still deletes what it may
    purged = audit_entries_purge()
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        assert cursor.fetchone()[0] == role
        cursor.execute("RESET ROLE")
    assert purged > 0
    assert chain.verify(chained.pk).ok


def test_beat_publishes_the_digests_every_interval(chained):
    # given the schedule beat runs
    entry = django_settings.CELERY_BEAT_SCHEDULE["publish-audit-digests"]
    assert entry["task"] == "audit.tasks.publish_audit_digests"
    assert entry["schedule"] == float(django_settings.AUDIT_DIGEST_INTERVAL_SECONDS) == 3600.0
    # when the task runs
    published = publish_audit_digests()
    # then the license's head is in its digest file
    assert published >= 1
    record = json.loads(digests.path_of(chained.pk).read_text().splitlines()[-1])
    assert record["seq"] == AuditChainHead.objects.get(pk=chained.pk).seq


def test_every_migration_leaves_the_audit_triggers_in_place(db):
    # SQLite drops a table's triggers when a migration rebuilds it: a later migration of audit_auditentry must
    # create them again (0003's SQLITE_FORWARD).
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgenabled = 'O' "
                "AND tgrelid::regclass::text IN ('audit_auditentry', 'audit_auditpurge')"
            )
            expected = {
                "audit_entry_append_only", "audit_entry_no_truncate", "audit_purge_append_only",
                "audit_purge_no_truncate", "audit_purge_check", "audit_purge_apply",
            }  # fmt: skip
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            expected = set(TRIGGERS.SQLITE_TRIGGERS)
        assert expected <= {name for (name,) in cursor.fetchall()}
