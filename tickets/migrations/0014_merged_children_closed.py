"""A merged child ticket is closed (tickets.services.ticket_merge); children merged before that rule stayed open
and waited in the queues (the dashboard's "waiting longest"). Close them, with a `status` event of the system,
their team links' copies, and a raised search generation for each license touched (its cached totals counted
them as open)."""

import time

from django.db import migrations
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

BATCH = 1000


def close_merged_children(apps, schema_editor):
    Ticket = apps.get_model("tickets", "Ticket")
    TicketTeam = apps.get_model("tickets", "TicketTeam")
    TicketEvent = apps.get_model("tickets", "TicketEvent")
    SearchGeneration = apps.get_model("tickets", "SearchGeneration")
    now = timezone.now()
    licenses = set()
    while True:
        batch = list(
            Ticket.objects.filter(parent__isnull=False)
            .exclude(status="closed")
            .values_list("id", "license_id", "status")[:BATCH]
        )
        if not batch:
            break
        TicketEvent.objects.bulk_create(
            TicketEvent(
                license_id=license_id,
                ticket_id=ticket_id,
                type="status",
                created_at=now,
                author_type="system",
                author_name="System",
                source_type="system",
                detailed_source="helpdeskSystem",
                payload={"old": status, "new": "closed"},
            )
            for ticket_id, license_id, status in batch
        )
        ids = [ticket_id for ticket_id, _, _ in batch]
        Ticket.objects.filter(pk__in=ids).update(status="closed", status_changed_at=now, updated_at=now)
        TicketTeam.objects.filter(ticket_id__in=ids).update(status="closed")
        licenses.update(license_id for _, license_id, _ in batch)
    generation = time.time_ns() // 1000
    for license_id in sorted(licenses):
        raised = SearchGeneration.objects.filter(pk=license_id).update(
            value=Greatest(F("value") + 1, Value(generation))
        )
        if not raised:
            SearchGeneration.objects.create(license_id=license_id, value=generation)


class Migration(migrations.Migration):
    dependencies = [
        ("tickets", "0013_search_generation"),
    ]

    operations = [
        migrations.RunPython(close_merged_children, migrations.RunPython.noop),
    ]
