"""Helpers for the audit tests: watch which entries an action writes."""

import contextlib

from audit.models import AuditEntry


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
