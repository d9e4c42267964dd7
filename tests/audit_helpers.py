"""Helpers for the audit tests: watch which entries an action writes."""

import contextlib

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
