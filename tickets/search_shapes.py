"""The search page's SQL compiled once per filter *shape*, the request's values bound into it (issue 34).

A search's page is one statement (tickets.output) around the SQL that selects the page's keys: the filters of
TicketFilterSet applied to the license's tickets, then the paginator's cursor, order and slice. Building that
queryset and compiling it through the ORM cost about a fifth of an inbox request. Most of it is the same on
every request of one shape: which parameters are present, the values that change the SQL's text (a flag's
`Y`/`N`, `rating`, the number of IDs in a list, ...), the order, the page's kind and size. Only the values vary
(the license's ID, the status, the IDs, the resolved RelativeDates, the cursor).

`keys_sql(license, filterset, paginator)` returns the keys' (SQL, parameters, descending) for a valid search:

- A shape's first request compiles its SQL as before (`TicketFilterSet.qs`, `KeysetPagination.page_queryset`),
  and compiles it a second time from the same shape with every bound value changed (another license ID, other
  IDs, another clock reading, ...). The shape is remembered only when both compiles give the same SQL text and
  each parameter is either the same in both (a constant of the shape) or, in both, the value of exactly one
  bound *slot* (below). What is remembered is the SQL and, per parameter, its constant or its slot.
- Later requests of the shape compute their slots (no queryset, no compile) and bind them: `bound_keys(license,
  data, paginator, now)` from the parsed values alone, so that such a search builds no FilterSet at all
  (tickets.selectors), or `keys_sql` when the caller holds one.
- The total's count SQL (tickets.totals.count_sql of `TicketFilterSet.count_queryset`) has shapes of its own,
  learned and proven the same way (`count_sql`; its key ends with "count" instead of the paging): a total that
  must be counted (a cache miss, or a bound that moves with the clock) is bound too.

The FilterSet stays the definition of the filters and of their SQL: this module only says, per parameter, how
its value enters the shape (`HOW`): as slots (`VALUE`, `ITEMS`, `ID_OR_NONE`, `MOMENT`, `TSQUERY`), in the key
(`KEYED`), not at all (`IGNORED`); a parameter it does not name (customFields) makes the search compile as
before, every time. tests/test_search_shapes.py checks every filter and combinations against a fresh compile.

Keyed on everything the SQL's text depends on besides the present parameters: the database vendor, the license's
detected languages when `query` is present (the tsquery's configs), the sort field, order, page size, offset
page number or cursor direction and whether the cursor is refined (a subquery). Nothing of the caller's role
enters the search's SQL (the base queryset is the license's tickets). Per process, least recently used first
out beyond `MAX_SHAPES`.

Measured (bench/README.md, issue 34, `bench/cpu.py --instructions --requests 10`, 1M-ticket copy, largest
license): the inbox 7.66 M -> 5.97 M instructions per request (floor 2.16 M), `hasTags=N` 8.33 M -> 5.92 M, with
the total's queryset no longer built when its count is cached (tickets.selectors.ticket_count).
"""

from __future__ import annotations

import copy
import datetime
import threading
import uuid
from collections import OrderedDict
from dataclasses import replace

from django.db import connection
from django.utils import timezone as dj_timezone
from django_filters.constants import EMPTY_VALUES
from rest_framework.exceptions import ValidationError

from helpdesk.api import relative_dates
from tickets import search, totals
from tickets.filters import NONE, ParsedForm, TicketFilterSet
from tickets.models import Ticket
from tickets.output import page_keys_sql

MAX_SHAPES = 512

# How a present parameter enters the shape.
VALUE = "value"  # its value is a slot
ITEMS = "items"  # a list: its length in the key, each item a slot
ID_OR_NONE = "id_or_none"  # `none` in the key, else the ID a slot
MOMENT = "moment"  # a RelativeDate: its moment at the request's clock reading (in `timezone`) a slot
TSQUERY = "tsquery"  # full text: the license's languages in the key, the query's tsquery text a slot
KEYED = "keyed"  # its value in the key
IGNORED = "ignored"  # no SQL of its own (`timezone` moves the moments, which are slots)

HOW = {
    "status": VALUE,
    "spam": KEYED,
    "silo": KEYED,
    "hasAssignee": KEYED,
    "hasParent": KEYED,
    "hasTags": KEYED,
    "shortID": VALUE,
    "query": TSQUERY,
    "parentTicketID": VALUE,
    "follower": VALUE,
    "rating": KEYED,
    "priority": VALUE,
    "priorityOp": KEYED,
    "timezone": IGNORED,
    "eventsScope": IGNORED,
    "slaBreached": KEYED,
    "teamIDs[]": ITEMS,
    "tagIDs[]": ITEMS,
    "language[]": ITEMS,
    "assignment.teamID": ID_OR_NONE,
    "assignment.agentID": ID_OR_NONE,
    **{
        name: MOMENT
        for name, filter_ in TicketFilterSet.base_filters.items()
        if isinstance(filter_, relative_dates.RelativeDateFilter)
    },
}

_shapes: OrderedDict = (
    OrderedDict()
)  # key -> (keys SQL, ((is slot, slot index or constant), ...), descending)
_lock = threading.Lock()


class _Request:
    """What one search's keys SQL is a function of: its shape's key and its slots."""

    def __init__(self, license, data: dict, now: datetime.datetime, paginator):
        self.license, self.data, self.now, self.paginator = license, data, now, paginator
        self.key, self.slots = _shape(license, data, now, paginator)


def keys_sql(license, filterset: TicketFilterSet, paginator) -> tuple[str, tuple, bool]:
    """(SQL, parameters, descending) of the keys of the search's page: bound into its shape's SQL, or compiled
    (and the shape remembered when its bindings are proven, see the module docstring). Raises the 400s the
    filters and the paginator raise for a RelativeDate out of range or an invalid cursor ID."""
    if connection.vendor != "postgresql":
        return _compiled(filterset, paginator)
    now = dj_timezone.now()
    data = filterset.form.cleaned_data
    try:
        request = _Request(license, data, now, paginator)
    except _NotBindable:
        return _compiled(filterset, paginator)
    filterset._relative_dates_now = now  # the clock reading the slots were resolved at
    found = _bind(request)
    if found is None:
        found = _compiled(filterset, paginator)
        _remember(request, _learn(request, found))
        return found
    # What the filters record for the total's cache key when they run (TicketFilterSet.count_digest).
    for part in recorded_parts(license, data):
        filterset._key_part(part)
    filterset.recorded = True
    return found


def bound_keys(license, data: dict, paginator, now: datetime.datetime) -> tuple[str, tuple, bool] | None:
    """`keys_sql` of a valid search whose shape is remembered, from its cleaned filter values (`data`, as
    tickets.filters.parse_params gives them) at the clock reading `now`, without a FilterSet; None when its
    shape is not remembered or not bindable (then `keys_sql` of its FilterSet). The same 400s as `keys_sql`."""
    try:
        return _bind(_Request(license, data, now, paginator))
    except _NotBindable:
        return None


def recorded_parts(license, data: dict) -> list:
    """What the filters record for the total's digest (TicketFilterSet._count_key_parts) when they run, for a
    search whose shape binds (none of them reads anything else): the license's languages for a full text."""
    query = data.get("query")
    if query not in EMPTY_VALUES and query.strip():
        return [("languages", _languages(license))]
    return []


def _bind(request: _Request) -> tuple[str, tuple, bool] | None:
    """The request's values bound into its shape's SQL, or None when the shape is not remembered."""
    with _lock:
        entry = _shapes.get(request.key)
        if entry is None:
            return None
        _shapes.move_to_end(request.key)
    sql, bindings, descending = entry
    slots = request.slots
    params = tuple(
        constant if at is None else slots[at] if wrap is None else wrap(slots[at])
        for at, wrap, constant in bindings
    )
    return sql, params, descending


def count_sql(license, data: dict, now: datetime.datetime, filterset=None) -> tuple[str, tuple]:
    """The SQL the search's total counts (tickets.totals.count_sql of `TicketFilterSet.count_queryset`) and its
    parameters: bound into its count's shape when remembered, else compiled from `filterset` (built from the
    parsed values `data` when None, at the clock reading `now`) and the shape learned as the page's is.

    Only a total that is counted needs it: a miss, or a bound that moves with the clock (`createdDateFrom=-30d`,
    counted on every request). Measured (bench/README.md, issue 34, `search3` branch): building the FilterSet
    and compiling the count: `createdDateFrom=-30d` 6.41 M -> 3.86 M instructions per search (bench/cpu.py
    --instructions, 100k set)."""
    try:
        request = _Request(license, data, now, None)
    except _NotBindable:
        request = None
    found = None if request is None else _bind(request)
    if found is not None:
        return found[:2]
    if filterset is None:
        filterset = TicketFilterSet.parsed(
            {}, Ticket.objects.for_license(license), license=license, cleaned=data
        )
        filterset._relative_dates_now = now
    found = _compiled(filterset, None)
    if request is not None:
        _remember(request, _learn(request, found))
    return found[:2]


def _remember(request: _Request, entry) -> None:
    if entry is not None:
        with _lock:
            _shapes[request.key] = entry
            while len(_shapes) > MAX_SHAPES:
                _shapes.popitem(last=False)


class _NotBindable(Exception):
    """A parameter this module does not bind is present: compile as before."""


def _compiled(filterset, paginator) -> tuple[str, tuple, bool | None]:
    """The page's keys (SQL, parameters, descending), or without a paginator the total's (SQL, parameters, None)."""
    if paginator is None:
        return (*totals.count_sql(filterset.count_queryset(filterset.qs)), None)
    return page_keys_sql(paginator.page_queryset(filterset.qs), paginator.sort_field)


def _languages(license) -> list:
    return license.detected_languages or []


def _moment(name: str, value, tz, now) -> datetime.datetime:
    try:
        return value.resolve(tz=tz, now=now)
    except relative_dates.RelativeDateError as error:  # as RelativeDateFilter reports it
        raise ValidationError({name: [str(error)]}) from None


def _shape(license, data: dict, now, paginator) -> tuple[tuple, list]:
    """The shape's key and the request's slots."""
    key: list = [connection.vendor]
    slots: list = [license.pk]
    tz = data.get("timezone") or datetime.UTC
    for name, value in data.items():
        if value in EMPTY_VALUES:  # what TicketFilterSet.filter_queryset skips
            continue
        how = HOW.get(name)
        if how is None:
            raise _NotBindable(name)
        if how == IGNORED:
            continue
        if how == KEYED:
            key.append((name, value))
        elif how == VALUE:
            key.append(name)
            slots.append(value)
        elif how == ITEMS:
            key.append((name, len(value)))
            slots.extend(value)
        elif how == ID_OR_NONE:
            key.append((name, value == NONE))
            if value != NONE:
                slots.append(value)
        elif how == MOMENT:
            key.append(name)
            slots.append(_moment(name, value, tz, now))
        elif how == TSQUERY:
            text = value.strip()
            if text:  # (blank: filter_query filters nothing)
                languages = _languages(license)
                key.append((name, tuple(languages)))
                slots.append(search.tsquery_text(text, languages))
    if paginator is None:  # the total's count
        key.append("count")
        return tuple(key), slots
    key.append((paginator.sort_field, paginator.order, paginator.page_size))
    cursor = paginator.cursor
    if cursor is None:
        key.append(("page", paginator.page_number))
    else:
        key.append((cursor.direction, paginator.cursor_refined()))
        pk = paginator._cursor_pk(Ticket).value  # a 400 for an invalid ID, as the paginator gives it
        slots += [cursor.value, cursor.value + datetime.timedelta(milliseconds=1), pk]
    return tuple(key), slots


# --- proving a shape's bindings ---------------------------------------------------------------------------


def _other(value, index: int):
    """A value of the same type as a slot's, different from it (and from the other slots' others)."""
    if isinstance(value, uuid.UUID):
        return uuid.uuid4()
    if isinstance(value, bool):
        raise _NotBindable(value)
    if isinstance(value, int):
        return value + 1 + index
    if isinstance(value, str):
        return f"{value}~{index}"
    raise _NotBindable(value)


def _changed(request: _Request) -> _Request:
    """The same shape with every slot's value changed: another license ID, other IDs and values, a clock reading
    a day and a second later, a cursor a day and a second later with another ID."""
    license = copy.copy(request.license)
    license.pk = request.license.pk + 1
    later = datetime.timedelta(days=1, seconds=1)
    data = {}
    for index, (name, value) in enumerate(request.data.items()):
        how = HOW.get(name)
        if value in EMPTY_VALUES or how in (KEYED, IGNORED):
            data[name] = value
        elif how == MOMENT:
            # a relative one moves with the clock reading; an absolute one is moved here, or its moment would
            # look like a constant of the shape's SQL and the next request's dates would be ignored
            absolute = value.absolute
            data[name] = value if absolute is None else replace(value, absolute=absolute + later)
        elif how == VALUE:
            data[name] = _other(value, index)
        elif how == ITEMS:
            data[name] = [_other(item, index * 1000 + i) for i, item in enumerate(value)]
        elif how == ID_OR_NONE:
            data[name] = value if value == NONE else _other(value, index)
        elif how == TSQUERY:
            data[name] = f"{value} zqxshape{index}"
    paginator = copy.copy(request.paginator)
    if paginator is not None and paginator.cursor is not None:
        paginator.cursor = replace(
            paginator.cursor, value=paginator.cursor.value + later, pk=str(uuid.uuid4())
        )
    return _Request(license, data, request.now + later, paginator)


def _compile_request(request: _Request) -> tuple[str, tuple, bool]:
    filterset = TicketFilterSet({}, Ticket.objects.for_license(request.license), license=request.license)
    filterset._form = ParsedForm(request.data)
    filterset._relative_dates_now = request.now
    return _compiled(filterset, request.paginator)


def _learn(request: _Request, found: tuple[str, tuple, bool]):
    """The shape's (SQL, bindings, descending) when a compile with every slot changed proves them, else None."""
    sql, params, descending = found
    try:
        other = _changed(request)
        other_sql, other_params, other_descending = _compile_request(other)
    except (_NotBindable, ValidationError, OverflowError, ValueError):
        return None
    if other_sql != sql or other_descending != descending or len(other_params) != len(params):
        return None
    pairs = list(zip(request.slots, other.slots, strict=True))
    bindings = []
    for value, other_value in zip(params, other_params, strict=True):
        if _same(value, other_value):
            if any(_same(value, slot) for slot in request.slots):
                # a constant equal to one of the request's values: that value may be a slot that did not
                # move (as absolute dates did before they were moved by `_changed`); not proven, not kept
                return None
            bindings.append((None, None, value))
            continue
        # A slot's value, or the value as the backend wraps it for its column (psycopg's Int2 of a smallint):
        # the same type in both compiles, a subclass of the slot's.
        wrap = type(value)
        at = [
            index
            for index, (slot, other_slot) in enumerate(pairs)
            if isinstance(value, type(slot))
            and _same(_wrapped(wrap, slot), value)
            and _same(_wrapped(wrap, other_slot), other_value)
        ]
        if len(at) != 1:
            return None
        bindings.append((at[0], None if wrap is type(request.slots[at[0]]) else wrap, None))
    return sql, tuple(bindings), descending


def _wrapped(wrap, slot):
    return slot if type(slot) is wrap else wrap(slot)


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b


def clear() -> None:
    """Forget every shape (tests)."""
    with _lock:
        _shapes.clear()
