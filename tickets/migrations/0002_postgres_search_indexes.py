"""PostgreSQL only: GIN indexes for full text and custom fields, led by the license (btree_gin).

On SQLite this migration does nothing (search falls back to icontains over `search_text`).
"""

from django.db import migrations

FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "CREATE INDEX IF NOT EXISTS ticket_lic_search_gin ON tickets_ticket USING gin (license_id, search_vector)",
    "CREATE INDEX IF NOT EXISTS ticket_lic_custom_gin ON tickets_ticket USING gin (license_id, custom_fields)",
]
BACKWARD = [
    "DROP INDEX IF EXISTS ticket_lic_custom_gin",
    "DROP INDEX IF EXISTS ticket_lic_search_gin",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("tickets", "0001_initial")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
