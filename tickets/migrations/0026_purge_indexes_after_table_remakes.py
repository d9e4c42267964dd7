"""The purge's indexes of 0007 again, where they are missing.

They are kept out of the model state (see 0007). On SQLite, a later migration that changes tickets_ticket (this
session's SLA columns) rebuilds the table from the model state, and the rebuilt table has no index the state does
not know: the purge would scan every ticket. `IF NOT EXISTS`: on PostgreSQL, where ALTER TABLE keeps them, this
changes nothing.
"""

import importlib

from django.db import migrations

_purge_indexes = importlib.import_module("tickets.migrations.0007_purge_indexes")


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("tickets", "0025_merge_20261125_1936")]
    operations = [migrations.RunPython(_purge_indexes.forward, migrations.RunPython.noop, elidable=False)]
