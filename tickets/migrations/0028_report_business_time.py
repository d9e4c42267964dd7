"""The reports' business time: first responses and resolutions in business seconds, and their rollups
(`response.business`, `resolution.business`), backfilled for the tickets that exist."""

from django.db import migrations, models

BATCH = 2000
ROLLUP_ROWS = 3000  # per upsert: 9 parameters a row, under SQLite's 32,766 and PostgreSQL's 65,535


def backfill(apps, schema_editor):
    """The business seconds of the first responses and resolutions of every ticket that has an SLA policy now,
    under that policy's business hours now (which policy applied when they were written is not recorded; a
    ticket whose policy is gone gets none), and the rollups they add (the metrics' own rules:
    tickets.reports.rollups). Tickets without a policy keep none: they stay out of the business reports.

    A license without any rollup rows (an install upgraded from before 0022, whose recount now waits for this
    one: see `rebuild` there) has them all recounted instead, by the app's rebuild. That runs the current code,
    so a later migration that changes the reports' models must take this recount after it (as this one took
    0022's)."""
    from tickets.reports import rollups
    from tickets.sla.clock import Schedule, between

    Ticket = apps.get_model("tickets", "Ticket")
    SlaPolicy = apps.get_model("tickets", "SlaPolicy")
    TicketMetrics = apps.get_model("tickets", "TicketMetrics")
    TicketResolution = apps.get_model("tickets", "TicketResolution")
    ReportRollup = apps.get_model("tickets", "ReportRollup")
    License = apps.get_model("accounts", "License")
    rolled = set(ReportRollup.objects.order_by().values_list("license_id", flat=True).distinct())
    licenses = SlaPolicy.objects.order_by("license_id").values_list("license_id", flat=True).distinct()
    for license_id in list(licenses):
        schedules = {
            str(policy.pk): None
            if policy.business_hours is None
            else Schedule.of(
                policy.business_hours.timezone, policy.business_hours.week, policy.business_hours.holidays
            )
            for policy in SlaPolicy.objects.filter(license_id=license_id).select_related("business_hours")
        }
        tickets = Ticket.objects.filter(license_id=license_id, sla_clock__isnull=False).order_by("pk")
        last, delta = None, {}
        while True:
            page = tickets if last is None else tickets.filter(pk__gt=last)
            rows = list(page.values_list("pk", "sla_clock", "created_at")[:BATCH])
            if not rows:
                break
            last = rows[-1][0]
            found = {
                pk: schedules[clock["policyID"]] for pk, clock, _ in rows if clock["policyID"] in schedules
            }
            created = {pk: created_at for pk, _, created_at in rows}
            answered = list(
                TicketMetrics.objects.filter(ticket_id__in=found, first_response_at__isnull=False)
            )
            made = {}  # this batch's contributions: every metric's, of which the business ones are kept
            for metrics in answered:
                metrics.first_response_business_seconds = between(
                    found[metrics.ticket_id], metrics.first_client_message_at, metrics.first_response_at
                )
                rollups.contribution(rollups.state_of_metrics(metrics, created[metrics.ticket_id]), 1, made)
            TicketMetrics.objects.bulk_update(answered, ["first_response_business_seconds"])
            solved = list(TicketResolution.objects.filter(ticket_id__in=found))
            for resolution in solved:
                resolution.business_seconds = between(
                    found[resolution.ticket_id], resolution.started_at, resolution.solved_at
                )
            TicketResolution.objects.bulk_update(solved, ["business_seconds"])
            rollups.resolution_contribution([r for r in solved if r.silo in rollups.REPORTED_SILOS], 1, made)
            for key, (count, seconds) in made.items():
                if key[0] in rollups.BUSINESS.values():
                    values = delta.setdefault(key, [0, 0.0])
                    values[0], values[1] = values[0] + count, values[1] + seconds
        business = sorted((key, values) for key, values in delta.items() if values[0] or values[1])
        for start in range(0, len(business) if license_id in rolled else 0, ROLLUP_ROWS):
            rollups.apply(license_id, dict(business[start : start + ROLLUP_ROWS]))
    for license_id in License.objects.order_by("pk").values_list("pk", flat=True):
        if license_id not in rolled and Ticket.objects.filter(license_id=license_id).exists():
            rollups.rebuild(license_id)


def forget(apps, schema_editor):
    """Back: the business rollups go with the columns."""
    from tickets.reports import rollups

    ReportRollup = apps.get_model("tickets", "ReportRollup")
    ReportRollup.objects.filter(metric__in=rollups.BUSINESS.values()).delete()


class Migration(migrations.Migration):
    dependencies = [("tickets", "0027_sla_indexes")]

    operations = [
        migrations.AddField(
            model_name="ticketmetrics",
            name="first_response_business_seconds",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="ticketresolution",
            name="business_seconds",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, forget),
    ]
