"""PostgreSQL only: the GIN index that full-text totals count the tickets' copy with (0028), led by the license
(btree_gin, as tickets' own in 0002), built CONCURRENTLY so that ticket writes go on meanwhile (measured: ~3 min
at 1M tickets on the loaded 2-core box; docs/operations.md, "Search performance")."""

from django.db import migrations

FORWARD = [
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS ticket_search_copy_gin "
    "ON tickets_ticketsearchcopy USING gin (license_id, search_vector)",
]
BACKWARD = ["DROP INDEX CONCURRENTLY IF EXISTS ticket_search_copy_gin"]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    atomic = False  # CONCURRENTLY

    dependencies = [("tickets", "0028_ticket_search_copy")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
