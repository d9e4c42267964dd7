"""Reads of a fixed shape compiled once per process: the ORM builds and compiles the statement with stand-in
values, and each read runs the same SQL with its own values in their places.

    _events = Compiled(lambda license_id, ticket_id: events.filter(license_id=license_id, ticket_id=ticket_id))
    rows = _events.rows(license.pk, ticket.pk)  # tuples, as the values_list() would give them

Issue 34: a write's response and its mail ran three such reads (the ticket's events, the document's key, the
thread's Message-IDs) and built and compiled each every time, ~0.3-0.6 ms of CPU apiece (bench/README.md
"Issue 34: writes, continued"). Only where the rows need no conversion from the database's values (a
`values_list()` of columns psycopg already gives as Python values: PostgreSQL's uuid, timestamptz, text,
integers, booleans): the compiler's converters are asked once, and a read that has any (every SQLite read, a
JSONField...) goes through the ORM each time, as before. Each stand-in must be among the statement's parameters
(checked when compiled), and no other parameter may equal one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from django.db import connections, router
from django.db.models.signals import post_save, pre_save

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
        self._compiled: tuple[str, list, list[list[int]]] | None = None
        self._orm = False  # the rows need converting: every read goes through the ORM

    def _compile(self) -> None:
        queryset = self.build(*self.stand_ins)
        self.model = queryset.model
        compiler = queryset.query.get_compiler(using=router.db_for_read(self.model))
        sql, params = compiler.as_sql()
        if compiler.connection.vendor != "postgresql" or compiler.get_converters(
            [column for column, _, _ in compiler.select]
        ):
            self._orm = True
            return
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
        with connections[router.db_for_read(self.model)].cursor() as cursor:
            cursor.execute(*statement)
            return cursor.fetchall()


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
    to the database): anything else goes the ORM's way, as before. A new ticket's metrics row, whose four
    `db_default` columns sent it to the ORM until issue 34's fourth round: create 21.83 -> 21.50 M instructions,
    mail in 22.98 -> 22.50 M; its team links, read back for their IDs: create 20.01 -> 19.65 M (bench/README.md).
    """

    def __init__(self, model):
        self.model = model
        self._sql: dict[int, str] = {}

    def _fits(self, connection) -> bool:
        meta = self.model._meta
        return (
            connection.vendor == "postgresql"
            and not meta.parents  # a child of a concrete model: its parent's row first, the ORM's way
            and not meta.proxy
            and not pre_save.has_listeners(self.model)
            and not post_save.has_listeners(self.model)
            # a column read back only for its `db_default`: the row gives its own value (an expression, such
            # as the `DatabaseDefault` left to the database, goes the ORM's way in save())
            and all(field.has_db_default() or field is meta.auto_field for field in meta.db_returning_fields)
            and not any(hasattr(field, "get_placeholder") for field in meta.local_concrete_fields)
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
        fields = [f for f in self.model._meta.local_concrete_fields if not f.generated and f is not auto]
        params = []
        for obj in objs:
            obj._prepare_related_fields_for_save(operation_name="bulk_create")
            values = [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields]
            if any(hasattr(value, "resolve_expression") for value in values):
                orm(objs)  # before any row is written
                return
            params.extend(values)
        sql = self._sql.get(len(objs))
        if sql is None:
            quote = connection.ops.quote_name
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
