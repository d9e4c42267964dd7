"""The SLA's three partial indexes on tickets (first in 0022_sla), built CONCURRENTLY on PostgreSQL."""

from django.db import migrations, models

from helpdesk.migration_operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False  # CONCURRENTLY on PostgreSQL

    dependencies = [("tickets", "0026_purge_indexes_after_table_remakes")]

    operations = [
        AddIndexConcurrently(
            model_name='ticket',
            index=models.Index(condition=models.Q(('sla_due_at__isnull', False)), fields=['sla_due_at', 'id'], name='ticket_sla_due'),
        ),
        AddIndexConcurrently(
            model_name='ticket',
            index=models.Index(condition=models.Q(('sla_due_at__isnull', False)), fields=['license', 'sla_due_at', 'id'], name='ticket_lic_sla_due'),
        ),
        AddIndexConcurrently(
            model_name='ticket',
            index=models.Index(condition=models.Q(('sla_breached', True)), fields=['license', 'silo', 'status', 'id'], name='ticket_lic_sla_breached'),
        ),
    ]
