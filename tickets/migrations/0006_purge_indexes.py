"""The purge's indexes (tickets/purge.py), built CONCURRENTLY on PostgreSQL so the web keeps writing meanwhile.

- `ticket_purge_silo_updated`: eligible tickets across licenses by silo and age. The purge is the one query
  that crosses licenses, so this index does not start with the license; it is partial (spam and trash rows
  only), so it stays small.
- `message_ticket_fk` and `ticket_parent_fk`: deleting a ticket makes PostgreSQL check the foreign keys that
  point at it (`SELECT 1 FROM tickets_message WHERE ticket_id = $1`, and the same for `parent_id`). Without an
  index led by the referencing column each check scans the whole table: measured 6.6 ms per deleted ticket
  with only 80,000 messages, growing with the table. The parent index is partial (merged tickets only).

Kept out of the model state (tickets/models.py belongs to the tickets' own code), so that makemigrations never
proposes to drop them.
"""

from django.db import migrations

INDEXES = {
    "ticket_purge_silo_updated": "tickets_ticket (silo, updated_at, id) WHERE silo IN ('spam', 'trash')",
    "message_ticket_fk": "tickets_message (ticket_id)",
    "ticket_parent_fk": "tickets_ticket (parent_id) WHERE parent_id IS NOT NULL",
}


def _concurrently(schema_editor) -> str:
    return "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""


def forward(apps, schema_editor):
    for name, columns in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX {_concurrently(schema_editor)}IF NOT EXISTS {name} ON {columns}")


def backward(apps, schema_editor):
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX {_concurrently(schema_editor)}IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("tickets", "0005_purge_run")]
    operations = [migrations.RunPython(forward, backward, elidable=False)]
