"""The storm limits' count reads the license's acknowledged mail of the last hour through a partial index:
through (license, created_at) it read every mail of the hour (bench/README.md, "seventh round")."""

from django.db import migrations, models

from helpdesk.migration_operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False  # CONCURRENTLY on PostgreSQL

    dependencies = [
        ("templates_app", "0014_outbound_rendered_by_worker"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="inboundmessage",
            index=models.Index(
                condition=models.Q(("auto_reply_allowed", True)),
                fields=["license", "created_at"],
                name="inbound_license_acknowledged",
            ),
        ),
    ]
