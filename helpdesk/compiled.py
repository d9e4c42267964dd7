"""Reads of a fixed shape compiled once per process: the ORM builds and compiles the statement with stand-in
values, and each read runs the same SQL with its own values in their places.

    _events = Compiled(lambda license_id, ticket_id: events.filter(license_id=license_id, ticket_id=ticket_id))
    rows = _events.rows(license.pk, ticket.pk)  # tuples, as the values_list() would give them

Issue 34: a write's response and its mail ran three such reads (the ticket's events, the document's key, the
thread's Message-IDs) and built and compiled each every time, ~0.3-0.6 ms of CPU apiece (bench/README.md
"Issue 34: writes, continued"). PostgreSQL only: every SQLite read goes through the ORM each time, as before.
The compiler's converters (a JSONField's decoding...) are asked once and applied to each read's rows as the
ORM's `results_iter` applies them. Each stand-in must be among the statement's parameters (checked when
compiled), and no other parameter may equal one. `targets`: the model field each selected column reads (None
for an expression), for a caller that builds instances from the rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from django.db import DatabaseError, connections, models, router, transaction
from django.db.models.signals import post_save, pre_save
from django.db.models.sql import UpdateQuery

_STAND_INS = {
    int: lambda n: -(10**12) - n,
    uuid.UUID: lambda n: uuid.UUID(int=2**127 + n),
    str: lambda n: f"\x01stand-in {n}\x01",
    datetime: lambda n: datetime(1901, 1, 1, 0, 0, n, tzinfo=UTC),
}


class Compiled:
    def __init__(self, build: Callable, *types: type):
        """`build(*values)`: the values_list() queryset of the read; `types`: the type of each value."""
        self.build = build
        self.stand_ins = [_STAND_INS[kind](n) for n, kind in enumerate(types)]
        self.model = None
        self.targets: list | None = None
        self._compiled: tuple[str, list, list[list[int]]] | None = None
        self._converters: list = []  # (position, converters, expression) of the columns that need converting
        self._orm = False  # not PostgreSQL: every read goes through the ORM

    def _compile(self) -> None:
        queryset = self.build(*self.stand_ins)
        self.model = queryset.model
        compiler = queryset.query.get_compiler(using=router.db_for_read(self.model))
        sql, params = compiler.as_sql()
        if compiler.connection.vendor != "postgresql":
            self._orm = True
            return
        columns = [column for column, _, _ in compiler.select]
        self.targets = [getattr(column, "target", None) for column in columns]
        self._converters = [
            (position, converters, expression)
            for position, (converters, expression) in compiler.get_converters(columns).items()
        ]
        params = list(params)
        positions = []
        for stand_in in self.stand_ins:
            found = [i for i, value in enumerate(params) if value == stand_in]
            if not found:
                raise ValueError(f"stand-in {stand_in!r} is no parameter of {sql!r}")
            positions.append(found)
        self._compiled = (sql, params, positions)

    def statement(self, *values) -> tuple[str, list] | None:
        """(SQL, parameters) of the read with `values`; None when it goes through the ORM."""
        if self._compiled is None and not self._orm:
            self._compile()
        if self._orm:
            return None
        sql, params, positions = self._compiled
        params = list(params)
        for found, value in zip(positions, values, strict=True):
            for position in found:
                params[position] = value
        return sql, params

    def rows(self, *values) -> list[tuple]:
        statement = self.statement(*values)
        if statement is None:
            return list(self.build(*values))
        connection = connections[router.db_for_read(self.model)]
        with connection.cursor() as cursor:
            cursor.execute(*statement)
            rows = cursor.fetchall()
        if not self._converters:
            return rows
        converted = []
        for row in map(list, rows):
            for position, converters, expression in self._converters:
                value = row[position]
                for converter in converters:
                    value = converter(value, expression, connection)
                row[position] = value
            converted.append(tuple(row))
        return converted


_RETURNED_AS_GIVEN = (str, int, type(None))  # and their subclasses (bool; psycopg's Int4...)

# Field classes whose INSERT parameter on PostgreSQL is the attribute itself when it has one of these exact types
# (`get_db_prep_save` -> `get_prep_value` -> `to_python` hands such a value back unchanged; the datetime only when
# aware). Not the integer fields: PostgreSQL's backend sends their values typed (psycopg's Int2/Int4/Int8).
# Issue 34: the ~110 column values of a new ticket by mail each went through that chain (see `Insert`).
_GIVEN_AS_IS = {
    models.CharField: (str,),
    models.TextField: (str,),
    models.EmailField: (str,),
    models.FloatField: (float,),
    models.BooleanField: (bool,),
    models.UUIDField: (uuid.UUID,),
    models.DateTimeField: (datetime,),
}


def _as_is(field) -> tuple[type, ...] | None:
    """The value types `field` sends to PostgreSQL as they are, None if every value goes the ORM's way."""
    target = field.target_field if isinstance(field, models.ForeignKey) else field
    kinds = _GIVEN_AS_IS.get(type(target))
    if kinds is None or getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return None
    if type(field).pre_save is not models.Field.pre_save and type(field) is not models.DateTimeField:
        return None  # a pre_save of its own (DateTimeField's only acts for auto_now/auto_now_add)
    return (*kinds, type(None)) if field.null else kinds


def _sent_as_is(value, as_is: tuple[type, ...]) -> bool:
    kind = type(value)
    return kind in as_is and (kind is not datetime or value.tzinfo is not None)


class Insert:
    """INSERTs of a model's rows (all its columns, values given in Python) with the SQL text built once per
    process and number of rows; each row's values are prepared as the ORM's INSERT prepares them
    (`pre_save`, `get_db_prep_save`).

    Issue 34: the events of every write and a new ticket's metrics row went through `bulk_create`/`save`, which
    build the INSERT field by field each time (bench/README.md "Issue 34: writes, third round"). Only for
    PostgreSQL, a model without save receivers (no `pre_save`/`post_save` listener: the audited models keep
    `Model.save`, and so would one that gains a receiver later), with no database-computed column to read back
    (an auto-incremented key is read back with RETURNING; a `db_returning` field only for its `db_default`,
    which a row that gives its own value does not use) and no value that is an expression (a `db_default` left
    to the database): anything else goes the ORM's way, as before. A column the ORM reads back for its
    `db_default` is given only a str, an int, a bool or None, which the row returns as given, so the instance
    holds what `RETURNING` would have set. A new ticket's metrics row, whose four `db_default` columns sent it
    to the ORM until issue 34's fourth round: create 21.83 -> 21.50 M instructions, mail in 22.98 -> 22.50 M, the
    bench's reply 22.36 -> 22.05 M; its team links, read back for their IDs: create 20.01 -> 19.65 M
    (bench/README.md, the fourth rounds of create and mail in, and of the agent reply).
    """

    def __init__(self, model):
        self.model = model
        self._sql: dict[int, str] = {}
        self._shape: tuple | None = None  # (fits bar the signals, columns' plan, positions read back)

    def _shaped(self) -> tuple:
        """What does not change while the process runs: whether the model fits bar its receivers, each column
        with the value types it sends as they are (or None), and the positions of the columns read back."""
        if self._shape is None:
            meta = self.model._meta
            fits = (
                not meta.parents  # a child of a concrete model: its parent's row first, the ORM's way
                and not meta.proxy
                # a column read back only for its `db_default`: the row gives its own value (an expression,
                # such as the `DatabaseDefault` left to the database, goes the ORM's way in save())
                and all(
                    field.has_db_default() or field is meta.auto_field for field in meta.db_returning_fields
                )
                and not any(hasattr(field, "get_placeholder") for field in meta.local_concrete_fields)
            )
            auto = meta.auto_field
            fields = [f for f in meta.local_concrete_fields if not f.generated and f is not auto]
            plan = [(field, _as_is(field)) for field in fields]
            self._shape = (fits, plan, [i for i, field in enumerate(fields) if field.db_returning])
        return self._shape

    def _fits(self, connection) -> bool:
        return (
            connection.vendor == "postgresql"
            and self._shaped()[0]
            and not pre_save.has_listeners(self.model)
            and not post_save.has_listeners(self.model)
        )

    def save(self, objs: list, orm: Callable[[list], object]) -> None:
        """Inserts `objs` (their `_state` then as after `save`); `orm(objs)` is the ORM's way, run instead
        where this one does not fit."""
        using = router.db_for_write(self.model)
        connection = connections[using]
        if not objs or not self._fits(connection):
            orm(objs)
            return
        auto = self.model._meta.auto_field  # an auto-incremented key: read back, as bulk_create sets it
        if auto is not None and any(obj.pk is not None for obj in objs):
            orm(objs)
            return
        _, plan, returned = self._shaped()
        params = []
        for obj in objs:
            obj._prepare_related_fields_for_save(operation_name="bulk_create")
            values = []
            for field, as_is in plan:
                if as_is is not None:
                    value = getattr(obj, field.attname)
                    if _sent_as_is(value, as_is):
                        values.append(value)
                        continue
                value = field.get_db_prep_save(field.pre_save(obj, True), connection)
                if hasattr(value, "resolve_expression"):
                    orm(objs)  # before any row is written
                    return
                values.append(value)
            if any(not isinstance(values[i], _RETURNED_AS_GIVEN) for i in returned):
                orm(objs)  # before any row is written
                return
            params.extend(values)
        sql = self._sql.get(len(objs))
        if sql is None:
            quote, fields = connection.ops.quote_name, [field for field, _ in plan]
            row = "(" + ", ".join(["%s"] * len(fields)) + ")"
            sql = self._sql[len(objs)] = (
                f"INSERT INTO {quote(self.model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
                f"VALUES {', '.join([row] * len(objs))}"
                + (f" RETURNING {quote(auto.column)}" if auto is not None else "")
            )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            # PostgreSQL returns the rows in the order of VALUES, as bulk_create relies on
            if auto is not None:
                for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
                    setattr(obj, auto.attname, pk)
        for obj in objs:
            obj._state.adding = False
            obj._state.db = using


class Update:
    """The UPDATE of one saved instance's named fields, as `obj.save(update_fields=...)` sends it, with the SQL
    text built once per process and list of fields; each value prepared as the ORM's UPDATE prepares it
    (`pre_save(obj, False)`, `get_db_prep_save`), an expression value (the ticket's tsvector, a RawSQL) compiled
    in its place by the ORM's compiler. The save's signals are sent as `Model.save_base` sends them (`pre_save`,
    then `post_save` with `created=False`), so their receivers see the save.

    Issue 34: a reply's `Ticket.save(update_fields=...)` built the UPDATE of 17 columns field by field every time
    (reply 23.04 -> 22.36 M, PATCH 9.56 -> 8.84 M; bench/README.md "Issue 34: the agent reply, fourth round").
    Only for PostgreSQL, a model that is not a child or a proxy, without `select_on_save`, and fields with no
    placeholder of their own: anything else is `orm()`.
    """

    def __init__(self, model):
        self.model = model
        self._sql: dict[tuple, str] = {}
        # update_fields -> each field they name with the value types it sends as they are (`_as_is`); [] where
        # the ORM saves (not all are columns, a child or proxy model, `select_on_save`, a field's placeholder)
        self._plans: dict[tuple, list] = {}

    def _plan(self, update_fields) -> list:
        plan = self._plans.get(tuple(update_fields))
        if plan is None:
            meta, names = self.model._meta, set(update_fields)
            fields = [
                f for f in meta.local_concrete_fields if not f.primary_key and {f.name, f.attname} & names
            ]
            fits = (
                len(fields) == len(names)
                and not meta.parents
                and not meta.proxy
                and not meta.select_on_save
                and not any(hasattr(field, "get_placeholder") for field in fields)
            )
            plan = self._plans[tuple(update_fields)] = [(f, _as_is(f)) for f in fields] if fits else []
        return plan

    def save(self, obj, update_fields: list[str], orm: Callable[[], object]) -> None:
        """Updates `obj`'s row (found by its primary key); `orm()`, the save it stands for, where this does not fit."""
        meta = self.model._meta
        using = router.db_for_write(self.model, instance=obj)
        connection = connections[using]
        plan = self._plan(update_fields)
        if not plan or connection.vendor != "postgresql":
            orm()
            return
        obj._prepare_related_fields_for_save(operation_name="save")
        update_fields = frozenset(update_fields)
        pre_save.send(sender=self.model, instance=obj, raw=False, using=using, update_fields=update_fields)
        compiler, sets, params = None, [], []
        for field, as_is in plan:
            value = field.pre_save(obj, False)
            if hasattr(value, "resolve_expression"):
                if compiler is None:
                    compiler = UpdateQuery(self.model).get_compiler(using)
                sql, expression_params = compiler.compile(
                    value.resolve_expression(compiler.query, allow_joins=False, for_save=True)
                )
                sets.append(sql)
                params.extend(expression_params)
            else:
                sets.append("%s")
                if as_is is not None and _sent_as_is(value, as_is):
                    params.append(value)  # what get_db_prep_save gives back for it (see _GIVEN_AS_IS)
                    continue
                params.append(field.get_db_prep_save(value, connection))
        fields = [field for field, _ in plan]
        key = (*(field.column for field in fields), *sets)
        statement = self._sql.get(key)
        if statement is None:
            quote, table = connection.ops.quote_name, connection.ops.quote_name(meta.db_table)
            assignments = ", ".join(f"{quote(f.column)} = {s}" for f, s in zip(fields, sets, strict=True))
            statement = self._sql[key] = (
                f"UPDATE {table} SET {assignments} WHERE {table}.{quote(meta.pk.column)} = %s"
            )
        params.append(meta.pk.get_db_prep_value(obj.pk, connection))
        with transaction.mark_for_rollback_on_error(using=using), connection.cursor() as cursor:
            cursor.execute(statement, params)
            if cursor.rowcount == 0:
                raise DatabaseError("Save with update_fields did not affect any rows.")
        obj._state.db = using
        obj._state.adding = False
        post_save.send(
            sender=self.model,
            instance=obj,
            created=False,
            update_fields=update_fields,
            raw=False,
            using=using,
        )
