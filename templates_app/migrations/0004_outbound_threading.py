# Threading of ticket mail: our Message-ID, the ticket and its message, the From and headers decided at write.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0004_attachment_transaction_bound_index'),
        ('templates_app', '0003_outboundmessage_attachments'),
        ('tickets', '0008_ticket_team_links'),
    ]

    operations = [
        migrations.AddField(
            model_name='outboundmessage',
            name='from_email',
            field=models.CharField(blank=True, max_length=400),
        ),
        migrations.AddField(
            model_name='outboundmessage',
            name='headers',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='outboundmessage',
            name='message_id',
            field=models.CharField(blank=True, db_index=True, max_length=250),
        ),
        migrations.AddField(
            model_name='outboundmessage',
            name='ticket',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tickets.ticket'),
        ),
        migrations.AddField(
            model_name='outboundmessage',
            name='ticket_message',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tickets.message'),
        ),
        migrations.AddIndex(
            model_name='outboundmessage',
            index=models.Index(fields=['ticket', 'created_at'], name='outbound_ticket_created'),
        ),
    ]
