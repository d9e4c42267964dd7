"""The reports' business time: first responses and resolutions in business seconds, and their rollups
(`response.business`, `resolution.business`), backfilled for the tickets that exist."""

from django.db import migrations, models

BATCH = 2000


def backfill(apps, schema_editor):
    """The business seconds of the first responses and resolutions of every ticket that has an SLA policy now,
    under that policy's business hours now (which policy applied when they were written is not recorded; a
    ticket whose policy is gone gets none). Tickets without a policy keep none: they stay out of the business
    reports. Their rollups are recounted, with every other rollup, by 0031_rebuild_report_rollups."""
    from tickets.sla.clock import Schedule, between

    Ticket = apps.get_model("tickets", "Ticket")
    SlaPolicy = apps.get_model("tickets", "SlaPolicy")
    TicketMetrics = apps.get_model("tickets", "TicketMetrics")
    TicketResolution = apps.get_model("tickets", "TicketResolution")
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
        last = None
        while True:
            page = tickets if last is None else tickets.filter(pk__gt=last)
            rows = list(page.values_list("pk", "sla_clock")[:BATCH])
            if not rows:
                break
            last = rows[-1][0]
            found = {pk: schedules[clock["policyID"]] for pk, clock in rows if clock["policyID"] in schedules}
            answered = list(
                TicketMetrics.objects.filter(ticket_id__in=found, first_response_at__isnull=False)
            )
            for metrics in answered:
                metrics.first_response_business_seconds = between(
                    found[metrics.ticket_id], metrics.first_client_message_at, metrics.first_response_at
                )
            TicketMetrics.objects.bulk_update(answered, ["first_response_business_seconds"])
            solved = list(TicketResolution.objects.filter(ticket_id__in=found))
            for resolution in solved:
                resolution.business_seconds = between(
                    found[resolution.ticket_id], resolution.started_at, resolution.solved_at
                )
            TicketResolution.objects.bulk_update(solved, ["business_seconds"])


def forget(apps, schema_editor):
    """Back: the business rollups go with the columns."""
    ReportRollup = apps.get_model("tickets", "ReportRollup")
    ReportRollup.objects.filter(metric__in=["response.business", "resolution.business"]).delete()


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
