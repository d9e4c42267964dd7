"""The unit of work: one `transaction.atomic()` block around one logical change, with callbacks that run inside
its transaction just before it commits.

    @unit_of_work
    def ticket_update(*, ticket, ...): ...

    with unit_of_work():
        ...
        before_commit(lambda: recount(license_id))

Django's `on_commit` runs after the commit, outside the transaction; what must commit or roll back with the
change (the audit entry of the change, anything derived from it) needs a hook before it. So the services, the
admin's views and the other write paths open a unit of work instead of a bare `transaction.atomic()`, and
`before_commit()` registers a callback on it. On the successful exit of the outermost unit of work on a
connection the callbacks run in three stages, each in the order they were registered (a callback may register
more; they run too, in their stage): the write's consequences (the audit, the rules: they may write more), then
the flushes of what the writes accumulated in memory (`stage=FLUSH`: the reports' rollups, one upsert in key
order), then the last (`last=True`: the search totals' generation); then the block exits and commits. The
flushes and the last take a write's final locks, so every write takes them in one order, after its rows'
(docs/architecture.md, "Locks are taken in one order"). If a callback raises, the block rolls back and the error
propagates. A unit of work that exits with an exception (or whose block is marked for rollback) drops its
callbacks.

A unit of work nested in another is a savepoint (`transaction.atomic()` nested); its callbacks run at the
outermost exit, even when its own savepoint rolled back: a callback reads what it needs from the database
when it runs (the audit reads each object's state then), it does not trust what was true when it was
registered. What a write does outside the database, or accumulates in memory for a callback, cannot be read
again: `on_rollback()` registers what undoes it when a unit of work around the write rolls back (a nested one
to its savepoint, or the whole). A bare `atomic()` block nested in a unit is not seen: nest a unit of work where
part of a unit may roll back alone. A unit of work opened inside a bare `transaction.atomic()` (a test case's
block, Django's own block around a deletion) runs its callbacks at its own exit: still inside that transaction.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import ContextDecorator
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction

logger = logging.getLogger(__name__)

# The stages of the before-commit callbacks, in the order they run (`before_commit(stage=...)`).
CONSEQUENCES, FLUSH, LAST = 0, 1, 2


class Unit:
    """The state of one outermost unit of work on one connection: its callbacks, and a dict in which the
    machinery built on it (the audit) keeps what it collects until the commit."""

    def __init__(self, commits: bool) -> None:
        self.stages: tuple[list[Callable[[], Any]], ...] = ([], [], [])  # CONSEQUENCES, FLUSH, LAST
        # per open unit of work, outermost first: what forgets its writes' part of `state` if it rolls back
        self.undo: list[list[Callable[[], Any]]] = [[]]
        self.state: dict[str, Any] = {}
        # Whether the transaction commits right after the callbacks: False inside a bare `transaction.atomic()`
        # (a test case's block, Django's block around a deletion), whose transaction goes on after them.
        self.commits = commits


_local = threading.local()  # Django's connections are per thread, so is this: {alias: [blocks], "unit": ...}


def _blocks(using: str) -> list:
    stacks = _local.__dict__.setdefault("blocks", {})
    return stacks.setdefault(using, [])


def _units() -> dict[str, Unit]:
    return _local.__dict__.setdefault("units", {})


def current_unit(using: str | None = None) -> Unit | None:
    """The outermost unit of work open on the connection, or None outside any."""
    return _units().get(using or DEFAULT_DB_ALIAS)


def before_commit(
    callback: Callable[[], Any], using: str | None = None, *, stage: int = CONSEQUENCES, last: bool = False
) -> None:
    """Run `callback()` inside the current unit of work's transaction, just before it commits.

    `stage`: FLUSH runs after every callback of the write's consequences, those registered later included (the
    reports' rollups: every write of the unit adds to them first, the rules' included). `last` (LAST): after
    every other callback (the search totals' bookkeeping, which takes its lock at the very end of every write).

    Outside a unit of work there is no such moment (autocommit, or a bare `transaction.atomic()` that nobody
    can hook into): that is a programming error, raised, never a callback silently lost.
    """
    unit = current_unit(using)
    if unit is None:
        raise transaction.TransactionManagementError(
            "before_commit() outside a unit of work: wrap the write in helpdesk.transactions.unit_of_work()"
        )
    unit.stages[LAST if last else stage].append(callback)


def on_rollback(callback: Callable[[], Any], using: str | None = None) -> None:
    """Run `callback()` after the innermost unit of work open around this call rolls back (to its savepoint, a
    rule that cannot apply in the rules engine; or whole), or one around it does: what the rolled-back write
    did outside the database is undone (a file it stored), and what it kept in `Unit.state` for a callback is
    forgotten (the rollups' pending rows). An error of the callback is logged, never raised."""
    unit = current_unit(using)
    if unit is None:
        raise transaction.TransactionManagementError("on_rollback() outside a unit of work")
    unit.undo[-1].append(callback)


class UnitOfWork(ContextDecorator):
    def __init__(self, using: str | None, savepoint: bool, durable: bool):
        self.using = using or DEFAULT_DB_ALIAS
        self.savepoint = savepoint
        self.durable = durable

    def _recreate_cm(self):
        # As a decorator, each call (and each thread) gets its own block.
        return UnitOfWork(self.using, self.savepoint, self.durable)

    def __enter__(self):
        blocks = _blocks(self.using)
        commits = not transaction.get_connection(self.using).in_atomic_block
        block = transaction.atomic(using=self.using, savepoint=self.savepoint, durable=self.durable)
        block.__enter__()
        if not blocks:
            _units()[self.using] = Unit(commits)
        else:
            _units()[self.using].undo.append([])
        blocks.append(block)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        blocks = _blocks(self.using)
        unit = _units()[self.using]
        error = None
        if len(blocks) == 1 and exc_type is None and not transaction.get_rollback(self.using):
            # Still open while the callbacks run: what they write may register more callbacks, or open a
            # unit of work (a savepoint in this one).
            try:
                while stage := next((stage for stage in unit.stages if stage), None):
                    stage.pop(0)()
            except BaseException as exc:
                error = exc
        rolls_back = error is not None or exc_type is not None or transaction.get_rollback(self.using)
        undo = unit.undo.pop()
        block = blocks.pop()
        if not blocks:
            del _units()[self.using]
        try:
            if error is not None:
                block.__exit__(type(error), error, error.__traceback__)  # rolls back
                raise error
            result = block.__exit__(exc_type, exc_value, traceback)
        except BaseException:  # rolled back (a failed commit too)
            _undo(undo)
            raise
        if rolls_back:
            _undo(undo)
        elif blocks:  # a nested unit released: its part rolls back with the enclosing unit
            unit.undo[-1].extend(undo)
        return result


def _undo(callbacks: list[Callable[[], Any]]) -> None:
    for callback in reversed(callbacks):
        try:
            callback()
        except Exception:  # never hides why the unit rolled back
            logger.exception("an on_rollback() callback failed")


def unit_of_work(using=None, savepoint: bool = True, durable: bool = False):
    """`transaction.atomic()` with before-commit callbacks; a context manager and a decorator, with or
    without arguments, as `transaction.atomic` is."""
    if callable(using):
        return UnitOfWork(DEFAULT_DB_ALIAS, savepoint, durable)(using)
    return UnitOfWork(using, savepoint, durable)


def in_open_unit(service: Callable[..., Any], /, **kwargs) -> Any:
    """Call `service`, a function decorated with `@unit_of_work`, in the unit of work already open on the connection,
    without the savepoint its decorator would open there (SAVEPOINT and RELEASE: two statements).

    Only for a caller whose unit fails whole when the service raises (the service's exception is never caught
    inside it): without the savepoint nothing but the whole unit can roll back. Mail in stores a mail whole or not
    at all (templates_app.inbound.services): its ticket write runs so, 19 -> 17 statements per new ticket
    (bench/README.md, "Issue 34: mail in, around ticket_create"). Its callbacks (`before_commit`) go to the open
    unit as a nested unit's do."""
    if current_unit() is None:
        raise transaction.TransactionManagementError("in_open_unit() outside a unit of work")
    # the undecorated function (functools.wraps sets __wrapped__, as ContextDecorator's decoration does); a plain
    # function (a test's stand-in) is called as it is
    return getattr(service, "__wrapped__", service)(**kwargs)
