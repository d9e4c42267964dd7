"""Retention: kept forever by default; with AUDIT_RETENTION_DAYS, old entries go and the chain still verifies."""

import datetime

import time_machine

from accounts import services
from audit import chain
from audit.models import AuditEntry
from audit.services import audit_entries_purge

NOW = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=400)


def test_entries_are_kept_forever_by_default(license, settings):
    # given
    settings.AUDIT_RETENTION_DAYS = 0
    before = AuditEntry.objects.count()
    # when
    purged = audit_entries_purge(now=NOW + datetime.timedelta(days=10_000))
    # then
    assert purged == 0
    assert AuditEntry.objects.count() == before


def test_entries_older_than_the_retention_period_are_purged_and_the_rest_still_verifies(license, settings):
    # given entries from long ago (the license's own) and recent ones
    settings.AUDIT_RETENTION_DAYS = 30
    old = set(AuditEntry.objects.filter(license=license).values_list("id", flat=True))
    with time_machine.travel(NOW - datetime.timedelta(days=1), tick=False):
        services.team_create(license=license, name="Recent")
        services.team_create(license=license, name="Recent too")
    recent = set(AuditEntry.objects.filter(license=license).values_list("id", flat=True)) - old
    # when, in small batches
    purged = audit_entries_purge(now=NOW, batch_size=2)
    # then
    assert purged == len(old)
    assert set(AuditEntry.objects.filter(license=license).values_list("id", flat=True)) == recent
    assert chain.verify(license.pk).ok, chain.verify(license.pk).problem
    # and new entries still link to the chain
    services.team_create(license=license, name="Later")
    assert chain.verify(license.pk).ok
