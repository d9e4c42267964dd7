# Reply addresses of a license (the customer's own domain), verified by a signed link.

import django.db.models.deletion
import django.db.models.functions.text
import django.utils.timezone
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0004_attachment_transaction_bound_index'),
        ('templates_app', '0004_outbound_threading'),
    ]

    operations = [
        migrations.CreateModel(
            name='ReplyAddress',
            fields=[
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('created_by', models.UUIDField(blank=True, null=True)),
                ('created_by_type', models.CharField(choices=[('agent', 'agent'), ('client', 'client'), ('system', 'system')], default='system', max_length=10)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_by', models.UUIDField(blank=True, null=True)),
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('email', models.EmailField(max_length=254)),
                ('name', models.CharField(blank=True, max_length=200)),
                ('verified_at', models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.AddField(
            model_name='replyaddress',
            name='license',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='%(class)ss', to='accounts.license'),
        ),
        migrations.AddIndex(
            model_name='replyaddress',
            index=models.Index(fields=['license', 'created_at'], name='reply_address_license_created'),
        ),
        migrations.AddConstraint(
            model_name='replyaddress',
            constraint=models.UniqueConstraint(models.F('license'), django.db.models.functions.text.Lower('email'), name='reply_address_email_unique'),
        ),
    ]
