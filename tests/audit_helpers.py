"""Helpers for the audit tests: watch which entries an action writes; go around the audit log's triggers."""

import contextlib
import importlib

from django.db import connection

from audit.models import AuditEntry
from helpdesk.context import API

UA = "helpdesk-tests/1.0"


def assert_api_author(entry, persona):
    """A write through the API by `persona`'s token, from the test client (127.0.0.1, UA)."""
    assert entry.author_type == API
    assert entry.author_id == persona.agent.pk  # the ID /v1/agents lists
    assert entry.author_account_id == persona.account.pk
    assert entry.author_email == persona.account.email
    assert entry.author_ip == "127.0.0.1"
    assert entry.author_user_agent == UA


class Written(list):
    def one(self) -> AuditEntry:
        assert len(self) == 1, [(e.action, e.target, e.entity_name, e.changes) for e in self]
        return self[0]


@contextlib.contextmanager
def entries_written():
    """`with entries_written() as written:` ... then `written` holds the entries the block wrote, in order."""
    existing = set(AuditEntry.objects.values_list("id", flat=True))
    written = Written()
    yield written
    written.extend(AuditEntry.objects.exclude(id__in=existing).order_by("created_at", "license_id", "seq"))


def assert_license_creation(written, license, author_type):
    # the license, its default team and template, its owner, and its trial subscription (under `licenses`)
    assert sorted((e.action, e.target) for e in written) == [
        ("create", "agents"), ("create", "emailTemplates"), ("create", "licenses"), ("create", "licenses"),
        ("create", "teams"),
    ]  # fmt: skip
    assert {e.license_id for e in written} == {license.pk}
    assert all(e.author_type == author_type for e in written)
    entries = {(e.target, e.object_id == str(license.pk)): e for e in written}
    license_entry, subscription_entry = entries["licenses", True], entries["licenses", False]
    assert license_entry.changes["defaultTeamID"] == {"before": None, "after": str(license.default_team_id)}
    assert license_entry.changes["defaultTemplateID"]["after"] == str(license.default_template_id)
    assert subscription_entry.changes["state"]["after"] == "active"
    assert subscription_entry.changes["isTrial"]["after"] is True
    assert "chargeInFlightID" not in subscription_entry.changes
    assert entries["agents", False].changes["teamIDs"]["after"] == [str(license.default_team_id)]


_TRIGGERS = importlib.import_module("audit.migrations.0003_purge_records_and_triggers")
AUDIT_TABLES = ("audit_auditentry", "audit_auditpurge")


@contextlib.contextmanager
def audit_triggers_disabled():
    """The audit log's triggers off for the block, as a database superuser (or whoever can write the SQLite file)
    could do: what an attacker beyond the application's reach looks like."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in AUDIT_TABLES:
                cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        else:
            for name in _TRIGGERS.SQLITE_TRIGGERS:
                cursor.execute(f"DROP TRIGGER {name}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                for table in AUDIT_TABLES:
                    cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
            else:
                for statement in _TRIGGERS.SQLITE_FORWARD:
                    cursor.execute(statement)


def let_the_test_flush_empty_the_audit_log():
    """A transactional test's teardown empties every table (TRUNCATE on PostgreSQL, DELETE on SQLite), which the
    audit log's triggers refuse, as they must in production. The tests' flush goes around them the way a
    superuser would: PostgreSQL's replica mode (superuser only) skips the triggers; on SQLite the two DELETE
    triggers are dropped and recreated within the flush's transaction.

    On PostgreSQL it also DELETEs instead of TRUNCATE: the few rows a test leaves go in ~70 ms, where a TRUNCATE
    of the ~60 tables took 1.5 s and its commit 0.7 s more (new files for every table and index, each synced),
    after every transactional test. Replica mode skips the foreign keys' triggers too, so the order is free."""
    operations = type(connection.ops)
    original = operations.sql_flush

    def sql_flush(self, style, tables, **kwargs):
        statements = original(self, style, tables, **kwargs)
        if not statements or not set(AUDIT_TABLES) & set(tables):
            return statements
        if self.connection.vendor == "postgresql":
            if kwargs.get("reset_sequences"):
                return ["SET LOCAL session_replication_role = replica", *statements]
            deletes = [f"DELETE FROM {self.quote_name(table)}" for table in sorted(tables)]
            return ["SET LOCAL session_replication_role = replica", *deletes]
        drop = [
            "DROP TRIGGER IF EXISTS audit_entry_no_delete",
            "DROP TRIGGER IF EXISTS audit_purge_no_delete",
        ]
        return [*drop, *statements, *_TRIGGERS.SQLITE_NO_DELETE]

    operations.sql_flush = sql_flush
