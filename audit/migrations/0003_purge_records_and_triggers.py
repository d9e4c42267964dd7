"""Deletion of audit entries only through a recorded retention purge; no TRUNCATE; on PostgreSQL and SQLite.

0002 let any session delete entries by setting `helpdesk.audit_purge`, and did not refuse TRUNCATE. Now:
- UPDATE and TRUNCATE of entries and of purge records are refused, and so is DELETE of purge records;
- an entry can be deleted only by the trigger of an `audit_auditpurge` insert (PostgreSQL: `pg_trigger_depth()`
  > 1, which plain SQL cannot fake, and only if a purge record covers the entry and its cutoff is after it);
- that insert is checked (the cut ends at a real entry, everything cut is older than the cutoff, the cutoff is
  `retention_days` before the database's clock, purges only move forward), then deletes and moves the anchor.
Purges made before (an anchor in a chain head) are recorded first, so that their chains still verify.
On PostgreSQL the deleting function is SECURITY DEFINER, so in a two-role deployment (docs/operations.md) the
application role needs no DELETE privilege on the table at all. SQLite has no roles: its triggers refuse the
same statements, but whoever can write the file can drop them.
"""

import datetime

import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

POSTGRES_FORWARD = """
CREATE OR REPLACE FUNCTION audit_entry_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'audit_auditentry' AND pg_trigger_depth() > 1 THEN
        -- Nested in a trigger: only audit_purge_apply deletes entries, and only those its record covers.
        IF EXISTS (
            SELECT 1 FROM audit_auditpurge p
            WHERE p.license_id = OLD.license_id AND p.through_seq >= OLD.seq AND p.cutoff > OLD.created_at
        ) THEN
            RETURN OLD;
        END IF;
    END IF;
    IF TG_TABLE_NAME = 'audit_auditentry' THEN
        RAISE EXCEPTION 'audit entries are append-only (%% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
    END IF;
    RAISE EXCEPTION 'audit purge records are append-only (%% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER audit_entry_no_truncate BEFORE TRUNCATE ON audit_auditentry
    FOR EACH STATEMENT EXECUTE FUNCTION audit_entry_append_only();
CREATE TRIGGER audit_purge_append_only BEFORE UPDATE OR DELETE ON audit_auditpurge
    FOR EACH ROW EXECUTE FUNCTION audit_entry_append_only();
CREATE TRIGGER audit_purge_no_truncate BEFORE TRUNCATE ON audit_auditpurge
    FOR EACH STATEMENT EXECUTE FUNCTION audit_entry_append_only();

CREATE OR REPLACE FUNCTION audit_purge_check() RETURNS trigger AS $$
BEGIN
    NEW.purged_at := now();
    IF NEW.retention_days < 1 OR NEW.cutoff > now() - make_interval(days => NEW.retention_days) THEN
        RAISE EXCEPTION 'audit purge refused: cutoff %% is not %% days in the past', NEW.cutoff, NEW.retention_days
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF EXISTS (SELECT 1 FROM audit_auditpurge WHERE license_id = NEW.license_id AND through_seq >= NEW.through_seq) THEN
        RAISE EXCEPTION 'audit purge refused: license %% was already purged through seq %% or later',
            NEW.license_id, NEW.through_seq USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM audit_auditentry
        WHERE license_id = NEW.license_id AND seq = NEW.through_seq AND hash = NEW.through_hash
    ) THEN
        RAISE EXCEPTION 'audit purge refused: license %% has no entry %% with that hash', NEW.license_id,
            NEW.through_seq USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF EXISTS (
        SELECT 1 FROM audit_auditentry
        WHERE license_id = NEW.license_id AND seq <= NEW.through_seq AND created_at >= NEW.cutoff
    ) THEN
        RAISE EXCEPTION 'audit purge refused: entries up to seq %% are not all older than the cutoff',
            NEW.through_seq USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT count(*) INTO NEW.deleted FROM audit_auditentry
        WHERE license_id = NEW.license_id AND seq <= NEW.through_seq;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION audit_purge_apply() RETURNS trigger AS $$
BEGIN
    DELETE FROM audit_auditentry WHERE license_id = NEW.license_id AND seq <= NEW.through_seq;
    UPDATE audit_auditchainhead SET anchor_seq = NEW.through_seq, anchor_hash = NEW.through_hash
        WHERE license_id = NEW.license_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT;
REVOKE ALL ON FUNCTION audit_purge_apply() FROM PUBLIC;

CREATE TRIGGER audit_purge_check BEFORE INSERT ON audit_auditpurge
    FOR EACH ROW EXECUTE FUNCTION audit_purge_check();
CREATE TRIGGER audit_purge_apply AFTER INSERT ON audit_auditpurge
    FOR EACH ROW EXECUTE FUNCTION audit_purge_apply();
"""

POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS audit_purge_apply ON audit_auditpurge;
DROP TRIGGER IF EXISTS audit_purge_check ON audit_auditpurge;
DROP FUNCTION IF EXISTS audit_purge_apply();
DROP FUNCTION IF EXISTS audit_purge_check();
DROP TRIGGER IF EXISTS audit_purge_no_truncate ON audit_auditpurge;
DROP TRIGGER IF EXISTS audit_purge_append_only ON audit_auditpurge;
DROP TRIGGER IF EXISTS audit_entry_no_truncate ON audit_auditentry;
CREATE OR REPLACE FUNCTION audit_entry_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('helpdesk.audit_purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit entries are append-only (%% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

# SQLite runs one statement per call: the statements are listed one by one.
SQLITE_NO_DELETE = [
    """CREATE TRIGGER audit_entry_no_delete BEFORE DELETE ON audit_auditentry
    WHEN NOT EXISTS (
        SELECT 1 FROM audit_auditpurge p
        WHERE p.license_id = OLD.license_id AND p.through_seq >= OLD.seq AND p.cutoff > OLD.created_at
    )
    BEGIN SELECT RAISE(ABORT, 'audit entries are append-only (DELETE refused)'); END""",
    """CREATE TRIGGER audit_purge_no_delete BEFORE DELETE ON audit_auditpurge
    BEGIN SELECT RAISE(ABORT, 'audit purge records are append-only (DELETE refused)'); END""",
]
SQLITE_FORWARD = [
    """CREATE TRIGGER audit_entry_no_update BEFORE UPDATE ON audit_auditentry
    BEGIN SELECT RAISE(ABORT, 'audit entries are append-only (UPDATE refused)'); END""",
    """CREATE TRIGGER audit_purge_no_update BEFORE UPDATE ON audit_auditpurge
    BEGIN SELECT RAISE(ABORT, 'audit purge records are append-only (UPDATE refused)'); END""",
    *SQLITE_NO_DELETE,
    # Django stores datetimes as UTC text ('YYYY-MM-DD HH:MM:SS.ffffff'): text order is time order.
    """CREATE TRIGGER audit_purge_check BEFORE INSERT ON audit_auditpurge
    BEGIN
        SELECT RAISE(ABORT, 'audit purge refused: the cutoff is not retention_days in the past')
            WHERE NEW.retention_days < 1
               OR NEW.cutoff > strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || NEW.retention_days || ' days');
        SELECT RAISE(ABORT, 'audit purge refused: already purged through that seq or later')
            WHERE EXISTS (SELECT 1 FROM audit_auditpurge
                          WHERE license_id = NEW.license_id AND through_seq >= NEW.through_seq);
        SELECT RAISE(ABORT, 'audit purge refused: no entry with that seq and hash')
            WHERE NOT EXISTS (SELECT 1 FROM audit_auditentry WHERE license_id = NEW.license_id
                              AND seq = NEW.through_seq AND hash = NEW.through_hash);
        SELECT RAISE(ABORT, 'audit purge refused: entries up to that seq are not all older than the cutoff')
            WHERE EXISTS (SELECT 1 FROM audit_auditentry WHERE license_id = NEW.license_id
                          AND seq <= NEW.through_seq AND created_at >= NEW.cutoff);
    END""",
    """CREATE TRIGGER audit_purge_apply AFTER INSERT ON audit_auditpurge
    BEGIN
        DELETE FROM audit_auditentry WHERE license_id = NEW.license_id AND seq <= NEW.through_seq;
        UPDATE audit_auditchainhead SET anchor_seq = NEW.through_seq, anchor_hash = NEW.through_hash
            WHERE license_id = NEW.license_id;
    END""",
]
SQLITE_TRIGGERS = [
    "audit_entry_no_update", "audit_purge_no_update", "audit_entry_no_delete", "audit_purge_no_delete",
    "audit_purge_check", "audit_purge_apply",
]  # fmt: skip


def record_earlier_purges(apps, schema_editor):
    """Purges made before this migration moved a chain head's anchor without a record: record them (their
    exact cutoff is unknown; before the oldest kept entry and at least the retention ago both hold)."""
    head_model = apps.get_model("audit", "AuditChainHead")
    entry_model = apps.get_model("audit", "AuditEntry")
    purge_model = apps.get_model("audit", "AuditPurge")
    now = django.utils.timezone.now()
    days = max(settings.AUDIT_RETENTION_DAYS, 1)
    for head in head_model.objects.using(schema_editor.connection.alias).filter(anchor_seq__gt=0):
        entries = entry_model.objects.using(schema_editor.connection.alias)
        oldest = entries.filter(license_id=head.license_id).order_by("seq").first()
        cutoff = now - datetime.timedelta(days=days)
        if oldest is not None:
            cutoff = min(cutoff, oldest.created_at)
        purge_model.objects.using(schema_editor.connection.alias).create(
            license_id=head.license_id,
            through_seq=head.anchor_seq,
            through_hash=head.anchor_hash,
            cutoff=cutoff,
            retention_days=days,
            purged_at=now,
        )


def forward(apps, schema_editor):
    record_earlier_purges(apps, schema_editor)
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_FORWARD:
            schema_editor.execute(statement)


def reverse(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE)
    elif schema_editor.connection.vendor == "sqlite":
        for name in SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only_trigger")]

    operations = [
        migrations.CreateModel(
            name="AuditPurge",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("license_id", models.BigIntegerField()),
                ("through_seq", models.PositiveBigIntegerField()),
                ("through_hash", models.CharField(max_length=64)),
                ("cutoff", models.DateTimeField()),
                ("retention_days", models.PositiveIntegerField()),
                ("purged_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("deleted", models.PositiveBigIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        models.F("license_id"), models.F("through_seq"), name="audit_purge_unique_per_license_seq"
                    )
                ],
            },
        ),
        migrations.RunPython(forward, reverse),
    ]
