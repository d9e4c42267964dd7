"""The reports' rollups recounted from the rows by the app's own rebuild (`manage.py rebuild_report_rollups`), once
every column it reads exists: the rows per set of visible teams and per current assignee (0028_report_rollups_teams_
and_current_assignee) and the business-time rows (0028_report_business_time). It runs the current code: a later
migration that changes the reports' models must take this recount after itself (as this one took 0022's and both
0028s'). At 1M tickets in one license: ~33 minutes and ~4 GB here (docs/operations.md, "Upgrading")."""

from django.db import migrations


def rebuild(apps, schema_editor):
    from tickets.reports import rollups

    License = apps.get_model("accounts", "License")
    Ticket = apps.get_model("tickets", "Ticket")
    for license_id in License.objects.values_list("pk", flat=True).order_by("pk"):
        if Ticket.objects.filter(license_id=license_id).exists():
            rollups.rebuild(license_id)


class Migration(migrations.Migration):
    dependencies = [
        ("tickets", "0028_report_business_time"),
        ("tickets", "0030_merge_20261125_2219"),
    ]

    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop)]
