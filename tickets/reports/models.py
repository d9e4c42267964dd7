"""What the reports need that the tickets do not keep: a ticket's first response and its resolution cycles.

Both are derived from the ticket's events (tickets.reports.cycles) in the transaction of the write that records
them (tickets.reports.wiring, on `events_recorded`), and backfilled from the events by the migration that made
them. They cascade with their ticket: a purged ticket leaves every report, as it leaves the search. The ticket
is named by its label: tickets.models imports this module at its end (as the webhooks' models).
"""

from __future__ import annotations

from django.db import models

from accounts.models import License


class TicketMetrics(models.Model):
    """One per ticket: where it came from, when the client first wrote and when an agent first answered, and
    the start of its open resolution cycle (null while it is solved or closed)."""

    ticket = models.OneToOneField(
        "tickets.Ticket", on_delete=models.CASCADE, primary_key=True, related_name="metrics"
    )
    license = models.ForeignKey(License, on_delete=models.CASCADE, related_name="+", db_index=False)
    source = models.CharField(max_length=10, default="system")
    # The ticket's creation, copied: ticketSources24 is one index range of these rows (joined to the tickets,
    # 740 ms for 30 days at 1M tickets; bench/README.md).
    created_at = models.DateTimeField(null=True, blank=True)
    # The ticket's silo, copied (tickets.reports.wiring, on its `silo` events): the reports leave spam and trash
    # out without joining every row to its ticket (a 30-day resolution report: 800 -> see bench/README.md).
    silo = models.CharField(max_length=10, default="tickets")
    first_client_message_at = models.DateTimeField(null=True, blank=True)
    first_response_at = models.DateTimeField(null=True, blank=True)
    first_response_seconds = models.FloatField(null=True, blank=True)
    # Who answered, and the ticket's assigned team then (IDs as they were: kept after a deletion, as events do).
    first_response_agent_id = models.UUIDField(null=True, blank=True)
    first_response_team_id = models.UUIDField(null=True, blank=True)
    cycle_started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["license", "created_at"], name="metrics_lic_created"),
            models.Index(
                fields=["license", "first_response_at"],
                name="metrics_lic_first_response",
                condition=models.Q(first_response_at__isnull=False),
            ),
        ]

    def __str__(self):
        return f"metrics of {self.ticket_id}"


class TicketResolution(models.Model):
    """One solved cycle of a ticket: from its creation (or its reopening) to the first `solved` after it."""

    ticket = models.ForeignKey(
        "tickets.Ticket", on_delete=models.CASCADE, related_name="resolutions", db_index=False
    )
    license = models.ForeignKey(License, on_delete=models.CASCADE, related_name="+", db_index=False)
    started_at = models.DateTimeField()
    solved_at = models.DateTimeField()
    seconds = models.FloatField()
    silo = models.CharField(max_length=10, default="tickets")  # the ticket's, copied as on TicketMetrics
    # The ticket's assignee and assigned team when it was solved.
    agent_id = models.UUIDField(null=True, blank=True)
    team_id = models.UUIDField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["license", "solved_at"], name="resolution_lic_solved"),
            models.Index(fields=["ticket"], name="resolution_ticket"),  # the cascade of a purge
        ]

    def __str__(self):
        return f"resolution of {self.ticket_id} at {self.solved_at}"
