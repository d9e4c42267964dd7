"""PostgreSQL only: a larger most-common-lexemes list for search_vector, so that rare words are estimated as
rare and served by the GIN index instead of an ordered scan of a whole license."""

from django.db import migrations


def _alter(target):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE tickets_ticket ALTER COLUMN search_vector SET STATISTICS {target}")

    return run


class Migration(migrations.Migration):
    dependencies = [("tickets", "0003_combination_indexes")]

    operations = [migrations.RunPython(_alter(2000), _alter(-1))]
