"""Ticket events (the contract's `events`), Message.rich_text_html and Message.delivery_status.

The messages written before this migration get their `message` event, whose ID is the message's own (a UUID
already, so the copy needs no UUID function and works alike on PostgreSQL and SQLite). Their source is not
known any more: `system`, detailed `migration`. One INSERT ... SELECT (about 10 s per million messages).
"""

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models

BACKFILL = """
    INSERT INTO tickets_ticketevent (id, license_id, ticket_id, type, created_at, author_type, author_agent_id,
                                     author_name, source_type, detailed_source, message_id, payload, position)
    SELECT m.id, m.license_id, m.ticket_id, 'message', m.created_at, m.author_type, m.author_agent_id,
           CASE WHEN m.author_type = 'client' THEN COALESCE(NULLIF(t.requester_name, ''), t.requester_email)
                WHEN m.author_type = 'agent' THEN COALESCE(NULLIF(a.name, ''), a.email, '')
                ELSE 'System' END,
           'system', 'migration', m.id, '{}', 0
    FROM tickets_message m
    JOIN tickets_ticket t ON t.id = m.ticket_id
    LEFT JOIN accounts_agent a ON a.id = m.author_agent_id
"""

# SQLite adds the two Message columns by rebuilding the table, which drops the indexes that 0007 made outside
# the model state; make them again (PostgreSQL keeps them: ALTER TABLE ADD COLUMN).
RESTORE_SQLITE_INDEXES = "CREATE INDEX IF NOT EXISTS message_ticket_fk ON tickets_message (ticket_id)"


def restore_sqlite_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(RESTORE_SQLITE_INDEXES)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0004_attachment_transaction_bound_index'),
        ('tickets', '0008_ticket_team_links'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='delivery_status',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='message',
            name='rich_text_html',
            field=models.TextField(blank=True, default=''),
        ),
        migrations.CreateModel(
            name='TicketEvent',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('type', models.CharField(choices=[('message', 'message'), ('status', 'status'), ('priority', 'priority'), ('assignment', 'assignment'), ('silo', 'silo'), ('tags', 'tags'), ('followers', 'followers'), ('teams', 'teams'), ('merge', 'merge'), ('rating', 'rating')], max_length=12)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('position', models.SmallIntegerField(default=0)),
                ('author_type', models.CharField(choices=[('agent', 'agent'), ('client', 'client'), ('system', 'system')], max_length=10)),
                ('author_name', models.CharField(blank=True, max_length=254)),
                ('source_type', models.CharField(choices=[('api', 'api'), ('email', 'email'), ('admin', 'admin'), ('system', 'system')], max_length=10)),
                ('detailed_source', models.CharField(blank=True, max_length=30)),
                ('payload', models.JSONField(blank=True, default=dict)),
                ('author_agent', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounts.agent')),
                ('license', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='ticket_events', to='accounts.license')),
                ('message', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='tickets.message')),
                ('ticket', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='tickets.ticket')),
            ],
            options={
                'indexes': [models.Index(fields=['license', 'ticket', 'created_at'], name='event_lic_ticket_created'), models.Index(condition=models.Q(('message__isnull', False)), fields=['message'], name='event_message')],
            },
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RunPython(restore_sqlite_indexes, migrations.RunPython.noop, elidable=False),
    ]
