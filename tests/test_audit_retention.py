"""Retention: kept forever by default; with AUDIT_RETENTION_DAYS, old entries go (each cut recorded by an
AuditPurge the database checks) and the chain still verifies."""

import datetime

import pytest
import time_machine
from django.db import DatabaseError, transaction

from accounts import services
from audit import chain
from audit.models import AuditEntry, AuditPurge
from audit.services import audit_entries_purge
from tests.factories import LicenseFactory

LONG_AGO = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=400)
YESTERDAY = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)


@pytest.fixture
def old_license(db):
    """A license whose first entries were written 400 days ago (the database's clock is not travelled)."""
    with time_machine.travel(LONG_AGO, tick=False):
        license = LicenseFactory(company_name="Old")
        services.team_create(license=license, name="Old team")
    return license


def test_entries_are_kept_forever_by_default(old_license, settings):
    # given
    settings.AUDIT_RETENTION_DAYS = 0
    before = AuditEntry.objects.count()
    # when
    purged = audit_entries_purge()
    # then
    assert purged == 0
    assert AuditEntry.objects.count() == before
    assert not AuditPurge.objects.exists()


def test_entries_older_than_the_retention_period_are_purged_and_the_rest_still_verifies(
    old_license, settings
):
    # given entries from long ago (the license's own) and recent ones
    settings.AUDIT_RETENTION_DAYS = 30
    old = list(
        AuditEntry.objects.filter(license=old_license).order_by("seq").values_list("id", "seq", "hash")
    )
    with time_machine.travel(YESTERDAY, tick=False):
        services.team_create(license=old_license, name="Recent")
        services.team_create(license=old_license, name="Recent too")
    recent = set(AuditEntry.objects.filter(license=old_license).values_list("id", flat=True)) - {
        o[0] for o in old
    }
    # when, in small batches
    purged = audit_entries_purge(batch_size=2)
    # then
    assert purged == len(old)
    assert set(AuditEntry.objects.filter(license=old_license).values_list("id", flat=True)) == recent
    report = chain.verify(old_license.pk)
    assert report.ok, report.problem
    # and each batch is a purge record; the last one is the chain's anchor
    purges = list(AuditPurge.objects.filter(license_id=old_license.pk).order_by("through_seq"))
    assert len(purges) == (len(old) + 1) // 2
    assert (purges[-1].through_seq, purges[-1].through_hash) == old[-1][1:]
    assert sum(p.deleted for p in purges) == len(old)
    assert all(p.retention_days == 30 for p in purges)
    # and new entries still link to the chain
    services.team_create(license=old_license, name="Later")
    assert chain.verify(old_license.pk).ok


@pytest.mark.parametrize("cut", ["cutoff too recent", "entries newer than the cutoff", "not an entry"])
def test_the_database_refuses_a_purge_that_would_cut_more_than_the_retention(old_license, cut):
    # given a purge record written by hand (as any session could), for a cut the retention does not allow
    newest = AuditEntry.objects.filter(license=old_license).order_by("seq").last()
    now = datetime.datetime.now(datetime.UTC)
    record = {
        "cutoff too recent": {"through_seq": newest.seq, "cutoff": now - datetime.timedelta(days=10)},
        "entries newer than the cutoff": {"through_seq": newest.seq, "cutoff": LONG_AGO},
        "not an entry": {"through_seq": newest.seq + 5, "cutoff": now - datetime.timedelta(days=31)},
    }[cut]
    # when, then
    with pytest.raises(DatabaseError, match="audit purge refused"), transaction.atomic():
        AuditPurge.objects.create(
            license_id=old_license.pk, through_hash=newest.hash, retention_days=30, **record
        )
    assert AuditEntry.objects.filter(license=old_license).count() == newest.seq
    assert chain.verify(old_license.pk).ok
