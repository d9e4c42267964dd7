"""An index for the purge: it finds the attachment transactions of a batch of tickets by what they are bound to
(`license, bound_type, bound_id`); without it each batch read all of the license's transactions.

Built CONCURRENTLY on PostgreSQL, so uploads keep working while it builds; a plain index elsewhere.
"""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class AddIndexConcurrentlyOnPostgres(AddIndexConcurrently):
    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        return migrations.AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        return migrations.AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("accounts", "0003_agent_signature_attachments")]
    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="attachmenttransaction",
            index=models.Index(fields=["license", "bound_type", "bound_id"], name="txn_license_bound"),
        ),
    ]
