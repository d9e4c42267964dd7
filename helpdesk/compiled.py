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
