"""The purge's index: eligible tickets across licenses, by silo and age (tickets/purge.py).

The one index on tickets_ticket that does not start with the license, because the purge is the one query that
crosses licenses. Partial: it holds only spam and trash rows, so it stays small. Kept out of the model state
(tickets/models.py belongs to the tickets' own code) so that makemigrations never proposes to drop it.
Built CONCURRENTLY on PostgreSQL, so that the web keeps writing tickets during the migration.
"""

from django.db import migrations

COLUMNS = "tickets_ticket (silo, updated_at, id) WHERE silo IN ('spam', 'trash')"


def forward(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(f"CREATE INDEX {concurrently}IF NOT EXISTS ticket_purge_silo_updated ON {COLUMNS}")


def backward(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS ticket_purge_silo_updated")


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("tickets", "0003_purge_run")]
    operations = [migrations.RunPython(forward, backward, elidable=False)]
