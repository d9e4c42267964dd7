"""Migration operations of our own."""

from __future__ import annotations

from django.db import migrations


class AddIndexConcurrently(migrations.AddIndex):
    """`AddIndex`, built `CONCURRENTLY` on PostgreSQL, so ticket writes go on while a big table's index builds
    (django.contrib.postgres's operation refuses SQLite, where this builds it plainly). Its migration must be
    `atomic = False`. Measured: `tickets.0023`'s five partial indexes took 48 s at 1M tickets with writes waiting."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.add_index(model, self.index, concurrently=True)
        else:
            schema_editor.add_index(model, self.index)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.remove_index(model, self.index, concurrently=True)
        else:
            schema_editor.remove_index(model, self.index)

    def describe(self):
        return super().describe() + " (concurrently on PostgreSQL)"
