"""A migration that drops a field's own index and touches nothing else (tests/test_indexes.py).

Django's AlterField drops a foreign key's constraint and adds it back for any change to the
field, `db_index` included, and adding it back checks every row under a lock that stops the
table's writes: on a table of forty million votes, minutes of an upgrade in which no event is
recorded. The constraint is the same before and after; only the index goes. So this is an
AlterField for the project's state, and for the database only the DROP INDEX that AlterField
would have made among its statements (found by the schema editor as AlterField finds it, so
Oracle's offline rendering names it too). Backwards, the index is made again."""

from django.db import migrations
from django.db.models import Index


class DropOwnIndex(migrations.AlterField):
    """`field` is the field as it becomes: the same as before but for `db_index=False`."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        old = from_state.apps.get_model(app_label, self.model_name)._meta.get_field(self.name)
        new = model._meta.get_field(self.name)
        if not old.db_index or new.db_index or old.unique:
            raise ValueError(
                f"{self.model_name}.{self.name}: DropOwnIndex only takes away a field's own index"
            )
        kept = [index.name for index in model._meta.indexes]
        for name in schema_editor._constraint_names(
            model, [old.column], index=True, type_=Index.suffix, exclude=kept
        ):
            schema_editor.execute(schema_editor._delete_index_sql(model, name))

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            field = model._meta.get_field(self.name)
            schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))

    def describe(self) -> str:
        return f"Drop the index of its own of {self.model_name}.{self.name} (a wider one leads with it)"
