"""Append-only and tamper-evident: the ORM and (on PostgreSQL) the database refuse changes, and the verifier
finds a modified, a deleted or a reordered row."""

import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, models, transaction

from accounts import services
from accounts.models import Team
from audit import chain
from audit.models import AppendOnly, AuditEntry
from tests.audit_helpers import audit_triggers_disabled
from tests.db_helpers import wait_for_a_lock_wait
from tests.factories import LicenseFactory, TeamFactory


@pytest.fixture
def chained(license):
    """A license whose chain has a handful of entries."""
    for n in range(3):
        services.team_create(license=license, name=f"Chained {n}")
    return license


def entries_of(license):
    return list(AuditEntry.objects.filter(license=license).order_by("seq"))


def tamper(sql, params=()):
    with audit_triggers_disabled(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def verify(license, capsys):
    try:
        call_command("verify_audit_chain", "--license", str(license.pk))
    except CommandError:
        return False, capsys.readouterr().err
    return True, capsys.readouterr().out


def test_the_orm_refuses_to_change_or_delete_entries(chained):
    entry = AuditEntry.objects.filter(license=chained).first()
    entry.entity_name = "forged"
    with pytest.raises(AppendOnly):
        entry.save()
    with pytest.raises(AppendOnly):
        entry.delete()
    with pytest.raises(AppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).update(entity_name="forged")
    with pytest.raises(AppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).delete()


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    ["UPDATE audit_auditentry SET entity_name = 'forged'", "DELETE FROM audit_auditentry"],
    ids=["UPDATE", "DELETE"],
)
def test_postgresql_refuses_update_and_delete_on_the_table(chained, sql):
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    assert AuditEntry.objects.filter(license=chained, entity_name="forged").count() == 0


def test_a_clean_chain_verifies(chained, other_license, capsys):
    # when
    ok, output = verify(chained, capsys)
    # then
    assert ok, output
    assert f"license {chained.pk}: OK ({len(entries_of(chained))} entries)" in output
    call_command("verify_audit_chain")  # every license
    assert "audit chain(s) OK" in capsys.readouterr().out


def test_the_verifier_finds_a_modified_row(chained, capsys):
    # given
    victim = entries_of(chained)[2]
    tamper("UPDATE audit_auditentry SET author_email = %s WHERE id = %s", ["someone@else.com", victim.id.hex])
    # when
    ok, output = verify(chained, capsys)
    # then
    assert not ok
    assert f"entry {victim.id} (seq {victim.seq}): content does not match its hash" in output


def test_the_verifier_finds_a_deleted_row(chained, capsys):
    # given
    victim = entries_of(chained)[1]
    tamper("DELETE FROM audit_auditentry WHERE id = %s", [victim.id.hex])
    # when
    ok, output = verify(chained, capsys)
    # then
    assert not ok
    assert f"seq {victim.seq + 1}, expected {victim.seq}" in output


def test_the_verifier_finds_a_row_deleted_from_the_end(chained, capsys):
    # given
    victim = entries_of(chained)[-1]
    tamper("DELETE FROM audit_auditentry WHERE id = %s", [victim.id.hex])
    # when
    ok, output = verify(chained, capsys)
    # then
    assert not ok
    assert f"the chain ends at seq {victim.seq - 1} but its head is at seq {victim.seq}" in output


def test_the_verifier_finds_reordered_rows(chained, capsys):
    # given two entries whose places in the chain are swapped
    first, second = entries_of(chained)[1:3]
    tamper("UPDATE audit_auditentry SET seq = 0 WHERE id = %s", [first.id.hex])
    tamper("UPDATE audit_auditentry SET seq = %s WHERE id = %s", [first.seq, second.id.hex])
    tamper("UPDATE audit_auditentry SET seq = %s WHERE id = %s", [second.seq, first.id.hex])
    # when
    ok, output = verify(chained, capsys)
    # then
    assert not ok
    assert f"entry {second.id} (seq {first.seq}): does not link to the previous entry" in output


def test_chains_are_per_license(license, other_license):
    # when both licenses change
    services.team_create(license=license, name="Here")
    services.team_create(license=other_license, name="There")
    # then each chain counts on its own and links only its own entries
    for each in (license, other_license):
        entries = entries_of(each)
        assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
        assert all(b.prev_hash == a.hash for a, b in zip(entries, entries[1:], strict=False))
        assert chain.verify(each.pk).ok


def test_deleting_an_audited_object_keeps_its_history(license):
    # given
    team = TeamFactory(license=license)
    team_id = str(team.pk)
    services.team_update(team=team, name="Doomed")
    # when
    services.team_delete(team=team)
    # then
    history = AuditEntry.objects.filter(object_id=team_id).order_by("seq")
    assert [e.action for e in history] == ["create", "update", "delete"]
    assert chain.verify(license.pk).ok


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_of_one_license_do_not_fork_the_chain():
    # given
    license = LicenseFactory()
    teams = [TeamFactory(license=license) for _ in range(8)]
    barrier = threading.Barrier(len(teams))
    errors = []

    def rename(team):
        try:
            barrier.wait()
            services.team_update(team=team, name=f"{team.name} renamed")
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connection.close()

    # when eight transactions append to the same chain at once
    threads = [threading.Thread(target=rename, args=(team,)) for team in teams]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # then every change has its entry, in one unbroken chain
    assert errors == []
    assert AuditEntry.objects.filter(license=license, action="update").count() == len(teams)
    report = chain.verify(license.pk)
    assert report.ok, report.problem


def test_the_audit_log_never_cascades_from_its_license():
    # Licenses cannot be deleted today (their default team and template protect them); if that changes, their
    # entries stay: no CASCADE and no database constraint that would force one.
    field = AuditEntry._meta.get_field("license")
    assert field.remote_field.on_delete is models.DO_NOTHING
    assert field.db_constraint is False


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_concurrent_change_of_the_same_object_is_not_hidden_from_the_diff():
    # given a team, and a first transaction that renamed it but has not committed yet
    license = LicenseFactory()
    team = TeamFactory(license=license, name="A")
    renamed, second_done = threading.Event(), threading.Event()
    release = threading.Event()

    def first():
        try:
            with transaction.atomic():
                services.team_update(team=Team.objects.get(pk=team.pk), name="B")
                renamed.set()
                release.wait(10)
        finally:
            connection.close()

    def second():
        try:
            renamed.wait(10)
            services.team_update(team=Team.objects.get(pk=team.pk), name="C")
        finally:
            second_done.set()
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    # when the second writer is waiting for the first one's row lock, the first commits
    renamed.wait(10)
    wait_for_a_lock_wait()
    release.set()
    for thread in threads:
        thread.join()
    # then the diffs chain up: A -> B, then B -> C (not A -> C)
    updates = AuditEntry.objects.filter(object_id=str(team.pk), action="update").order_by("seq")
    assert [(e.changes["name"]["before"], e.changes["name"]["after"]) for e in updates] == [
        ("A", "B"),
        ("B", "C"),
    ]


def test_the_chain_is_keyed_so_a_rewrite_without_the_key_does_not_verify(license, settings):
    # given a chain written with one key
    settings.AUDIT_HASH_KEY = "kept-outside-the-database"
    services.team_create(license=license, name="Keyed")
    keyed = AuditEntry.objects.filter(license=license).order_by("seq").last()
    # then its hash is not the one anybody could compute without the key
    settings.AUDIT_HASH_KEY = ""
    assert chain.entry_hash(keyed) != keyed.hash
    assert not chain.verify(license.pk).ok
    settings.AUDIT_HASH_KEY = "kept-outside-the-database"
    assert chain.entry_hash(keyed) == keyed.hash
