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
    # The same in business seconds, under the ticket's SLA policy's business hours when the response was written
    # (calendar seconds under a 24/7 policy); null without a policy then (the reports' `clock=business`).
    first_response_business_seconds = models.FloatField(null=True, blank=True)
    # Who answered, and the ticket's assigned team then (IDs as they were: kept after a deletion, as events do).
    first_response_agent_id = models.UUIDField(null=True, blank=True)
    first_response_team_id = models.UUIDField(null=True, blank=True)
    cycle_started_at = models.DateTimeField(null=True, blank=True)
    # The ticket's fields its rollups (ReportRollup) were last counted with: a write's receiver takes the
    # ticket's contribution before from these and after from the ticket, and adds the difference.
    status = models.CharField(max_length=10, default="", db_default="")
    assignee_id = models.UUIDField(null=True, blank=True)
    assigned_team_id = models.UUIDField(null=True, blank=True)
    rated_at = models.DateTimeField(null=True, blank=True)
    rating = models.CharField(max_length=4, default="", db_default="")
    # The teams the ticket is visible to (its team links, as `teamIDs[]` selects tickets): their IDs sorted,
    # comma-joined; kept from the write's `teams` events as the copies above (tickets.reports.rollups).
    teams = models.TextField(blank=True, default="", db_default="")
    # Its resolutions (TicketResolution rows): a change of its assignee or teams re-counts their rows, read only
    # when there are some (most tickets are assigned before they are solved: no statement).
    resolved = models.PositiveIntegerField(default=0, db_default=0)

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
    business_seconds = models.FloatField(null=True, blank=True)  # as first_response_business_seconds
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


class ReportRollup(models.Model):
    """Per license, report metric, UTC hour (and UTC day) and dimension: the rows counted and their seconds summed.

    `metric`: `new` (tickets created), `source` (`key`: the source), `status.<status>` (tickets created now in
    the status), `rating` (`key`: good/bad), `response` and `resolution` (`key`: the seconds' histogram bucket,
    tickets.reports.rollups.bucket), `response.business` and `resolution.business` (the same of the rows with
    business seconds, in business seconds). `dim`: "" the license's whole, "a" per agent, "t" per team (`ident`:
    the agent's or team's ID, "" for none); "c" per current assignee (response and resolution, and their business
    variants); "v" per set of teams the ticket is visible to now (`ident`: the set's key,
    tickets.reports.rollups.team_set_key), the sets' members under metric `teams`, dim "m" (`ident`: a team,
    `key`: a set's key, `count`: the tickets of that set). Kept in the write's transaction (tickets.reports.wiring) by adding the
    difference a write makes; rebuilt by `manage.py rebuild_report_rollups`. Zero rows may stay: they add 0.
    """

    license = models.ForeignKey(License, on_delete=models.CASCADE, related_name="+", db_index=False)
    metric = models.CharField(max_length=20)
    dim = models.CharField(max_length=1, blank=True)
    grain = models.CharField(max_length=1, default="h")  # "h": `hour` is the hour's start; "d": the UTC day's
    hour = models.DateTimeField()
    ident = models.CharField(max_length=36, blank=True)
    key = models.CharField(max_length=32, blank=True)
    count = models.BigIntegerField(default=0)
    seconds = models.FloatField(default=0)

    class Meta:
        constraints = [
            # The upsert's conflict target, and the reports' index: license, metric and dim equal, hours a range.
            # On PostgreSQL it INCLUDEs count and seconds (migration 0022: a report's sums are an index-only
            # scan); not declared here, as SQLite would then make no unique index at all.
            models.UniqueConstraint(
                fields=["license", "metric", "dim", "grain", "hour", "ident", "key"],
                name="report_rollup_key",
            )
        ]
        indexes = [
            # A filtered report (one team's visible sets, one agent) reads its idents' rows only: with the ident
            # after the hour range, one team's year of hour rows (`resolutionTime24`) scanned every set's rows.
            # Measured at 1M (4.08 M rollup rows, idle box): one team 463 -> 43 ms p95, one agent 142 -> 44 ms.
            models.Index(
                fields=["license", "metric", "dim", "grain", "ident", "hour"],
                include=["key", "count", "seconds"],
                condition=models.Q(dim__in=["a", "c", "v"]),
                name="report_rollup_ident",
            )
        ]

    def __str__(self):
        return f"{self.metric} {self.dim}{self.ident} {self.hour:%Y-%m-%d %H}h {self.key}: {self.count}"
