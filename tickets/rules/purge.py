"""The firing rows of purged tickets go with them (their index starts with the license and the ticket)."""

from __future__ import annotations

from tickets.rules.models import RuleFiring


def on_tickets_purging(sender, *, license_id: int, ticket_ids: list, **kwargs) -> None:
    rows = RuleFiring.objects.filter(license_id=license_id, ticket_id__in=ticket_ids)
    rows._raw_delete(rows.db)
