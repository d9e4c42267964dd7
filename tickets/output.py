"""The contract's Ticket documents, built in bulk: the output of ticket search, the product's hottest path.

`ticket_page(page_queryset, sort_field)` turns an ordered, sliced queryset of tickets (the filtered search with
its cursor or offset) into one item per ticket: ``{"id", <sort_field>, "doc"}``, where `doc` is what the response
lists. The paginator reads `id` and the sort value for its cursors; the view renders the docs.

The documents' fields are declared once, in tickets.document (which the OpenAPI schema also derives from).

* **PostgreSQL**: one query. The ORM compiles the page's IDs and sort values (filters, cursor, order, limit);
  that SQL becomes a subquery of a statement in which PostgreSQL builds each document with `json_build_object`
  (`tickets.document.document_sql()`: timestamps formatted; parent, assignment, teams, tags, followers and
  children by subqueries per ticket).
  Python neither loads the rows' columns nor builds dicts: each document arrives as JSON text and is embedded
  in the response as an `orjson.Fragment`; the items' `id` and sort value arrive as the cursor's text
  (`helpdesk.api.pagination.cursor_text`). This is what makes a search request cheap in CPU (see bench/).
* **SQLite** (the embedded default): the same documents built in Python (`tickets.document.build`) from
  `.values()` rows and one UNION query for the related IDs.

Both are derived from the same table; tests/test_tickets_output.py still compares them ticket by ticket.
Events (`events`) are added in Python by both (tickets.events_output), only when asked: a single read, or a
search with `eventsScope=all`; the default search path does not change.
"""

from __future__ import annotations

import uuid

import orjson
from django.db import connection, connections
from django.db.models import CharField, Value

from helpdesk.compiled import Compiled
from helpdesk.replicas import read_alias
from tickets import document
from tickets.document import CHILD_COLUMNS, document_sql
from tickets.events_output import events_by_ticket
from tickets.models import Ticket
from tickets.totals import GENERATION_SQL

# --- PostgreSQL: documents built by the database ----------------------------------------------------------


def _page_sql(keys_sql: str, descending: bool, generation: bool = False) -> str:
    # The keys come back as the cursor's text (`helpdesk.api.pagination.cursor_text`): the paginator reads only
    # the first and the last, and loading a hundred timestamps and UUIDs as Python objects cost ~0.3 ms.
    # `generation`: a fourth column, the license's search generation (its parameter first), read once
    # (PostgreSQL's InitPlan) from the page's own snapshot.
    direction = "DESC" if descending else "ASC"
    return f"""
        SELECT k.id::text,
               to_char(k.sort_value AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
               {document_sql()}{f", {GENERATION_SQL}" if generation else ""}
        FROM ({keys_sql}) AS k(id, sort_value)
        JOIN {Ticket._meta.db_table} t ON t.id = k.id
        ORDER BY k.sort_value {direction}, k.id {direction}"""


def page_keys_sql(page_queryset, sort_field: str) -> tuple[str, tuple, bool]:
    """The SQL selecting the page's (ID, sort value), its parameters, and whether it walks descending."""
    keys = page_queryset.values_list("id", sort_field)
    return (*keys.query.sql_with_params(), _is_descending(page_queryset))


def _page_postgresql(page_queryset, sort_field: str, keep_json: bool = False) -> list[dict]:
    return _page_from_keys(*page_keys_sql(page_queryset, sort_field), sort_field, keep_json)


def _page_from_keys(keys_sql: str, params, descending: bool, sort_field: str, keep_json: bool) -> list[dict]:
    with connections[read_alias()].cursor() as cursor:  # a replica's, inside a designated read
        cursor.execute(_page_sql(keys_sql, descending), params)
        rows = cursor.fetchall()
    return _items(rows, sort_field, keep_json)


def _items(rows, sort_field: str, keep_json: bool) -> list[dict]:
    if keep_json:  # the events are spliced into the text (_with_events)
        return [{"id": pk, sort_field: value, "doc": None, "json": doc} for pk, value, doc in rows]
    return [{"id": pk, sort_field: value, "doc": orjson.Fragment(doc)} for pk, value, doc in rows]


def _is_descending(queryset) -> bool:
    first = queryset.query.order_by[0]
    return getattr(first, "descending", False) if not isinstance(first, str) else first.startswith("-")


# --- SQLite (and any other database): documents built in Python ------------------------------------------


def _related_rows(license_id, ticket_ids):
    blank = Value("", output_field=CharField())

    def kind(name):
        return Value(name, output_field=CharField())

    through = {
        name: getattr(Ticket, name).through.objects.filter(ticket_id__in=ticket_ids)
        for name in ("teams", "tags", "followers")
    }
    return (
        through["teams"]
        .values_list(kind("teams"), "ticket_id", "team_id", blank, blank)
        .union(
            through["tags"].values_list(kind("tags"), "ticket_id", "tag_id", blank, blank),
            through["followers"].values_list(kind("followers"), "ticket_id", "agent_id", blank, blank),
            Ticket.objects.filter(license_id=license_id, parent_id__in=ticket_ids).values_list(
                kind("children"), "parent_id", *CHILD_COLUMNS
            ),
            all=True,
        )
    )


def _related(license_id, ticket_ids) -> dict:
    """{ticket ID: {"teams", "tags", "followers": [ID text], "children": [CHILD_COLUMNS row]}} in one query."""
    related = {
        ticket_id: {"teams": [], "tags": [], "followers": [], "children": []} for ticket_id in ticket_ids
    }
    if not ticket_ids:
        return related
    for name, ticket_id, other_id, short_id, subject in _related_rows(license_id, ticket_ids):
        if name == "children":
            related[ticket_id]["children"].append({"id": other_id, "short_id": short_id, "subject": subject})
        else:
            related[ticket_id][name].append(str(other_id))
    return related


def ticket_dicts(rows) -> list[dict]:
    """The contract's Ticket objects for `rows` (`.values(*tickets.document.COLUMNS)` rows), in order."""
    rows = list(rows)
    related = _related(rows[0]["license_id"] if rows else None, [row["id"] for row in rows])
    return [document.build(row, related[row["id"]]) for row in rows]


def _page_python(page_queryset, sort_field: str) -> list[dict]:
    rows = list(page_queryset.values(*dict.fromkeys((*document.COLUMNS, sort_field))))
    return [
        {"id": row["id"], sort_field: row[sort_field], "doc": doc}
        for row, doc in zip(rows, ticket_dicts(rows), strict=True)
    ]


# --- events (single reads, and search with eventsScope=all) --------------------------------------------------


def _with_events(items: list[dict], license_id) -> list[dict]:
    """The items' documents with their `events` (tickets.events_output), in one more query.

    A PostgreSQL document is JSON text already (an orjson.Fragment): the events' JSON is spliced in before its
    closing brace rather than the document parsed and serialized again."""
    ids = {str(item["id"]): uuid.UUID(str(item["id"])) for item in items}
    events = events_by_ticket(license_id, ids.values())
    for item in items:
        ticket_events = events[ids[str(item["id"])]]
        if isinstance(item["doc"], dict):
            item["doc"]["events"] = ticket_events
        else:
            text = item.pop("json")
            item["doc"] = orjson.Fragment(
                text[:-1] + ',"events":' + orjson.dumps(ticket_events).decode() + "}"
            )
    return items


# --- entry points -------------------------------------------------------------------------------------------


def ticket_page(page_queryset, sort_field: str, *, events: bool = False, license_id=None) -> list[dict]:
    """`[{"id", sort_field, "doc"}]` for an ordered (by `sort_field`, then pk) and sliced ticket queryset;
    with `events`, each document carries the ticket's events (`license_id` then names the tickets' license)."""
    if connection.vendor == "postgresql":
        items = _page_postgresql(page_queryset, sort_field, keep_json=events)
    else:
        items = _page_python(page_queryset, sort_field)
    return _with_events(items, license_id) if events and items else items


def ticket_page_from_keys(
    keys_sql: str, params, descending: bool, sort_field: str, *, events: bool = False, license_id=None
) -> list[dict]:
    """`ticket_page` of the page whose keys `keys_sql` selects (PostgreSQL; `page_keys_sql` of its queryset, or
    the same statement compiled once per search shape, tickets.search_shapes)."""
    items = _page_from_keys(keys_sql, params, descending, sort_field, keep_json=events)
    return _with_events(items, license_id) if events and items else items


def ticket_page_and_generation(
    keys_sql: str, params, descending: bool, sort_field: str, *, events: bool, license_id
) -> tuple[list[dict], int | None]:
    """`ticket_page_from_keys`, and the license's search generation read by the same statement (None for an
    empty page: no row carries it). The generation comes from the page's snapshot, so the page and a total
    looked up at it (`tickets.totals.exact_count(generation=...)`) see the same writes."""
    with connections[read_alias()].cursor() as cursor:  # a replica's, inside a designated read
        cursor.execute(_page_sql(keys_sql, descending, generation=True), (license_id, *params))
        rows = cursor.fetchall()
    generation = rows[0][3] if rows else None
    items = _items([row[:3] for row in rows], sort_field, keep_json=events)
    return (_with_events(items, license_id) if events and items else items), generation


def ticket_document(queryset, ticket_id, *, license_id):
    """The document of one ticket of `queryset` with its events (IndexError when it is not there)."""
    return ticket_read(queryset, ticket_id, license_id=license_id)[0]


# The document's key of one ticket of a license, the statement compiled once (helpdesk.compiled): the same
# statement as ticket_read's of the license's tickets. Issue 34: every write's response reads it.
_ticket_key = Compiled(
    lambda license_id, ticket_id: (
        Ticket.objects.filter(license_id=license_id, pk=ticket_id)
        .order_by("updated_at", "pk")[:1]
        .values_list("id", "updated_at")
    ),
    int,
    uuid.UUID,
)


def license_ticket_read(license_id, ticket_id) -> tuple:
    """`ticket_read` of the license's ticket `ticket_id` (IndexError when it is not there)."""
    statement = _ticket_key.statement(license_id, ticket_id)
    if statement is None:
        return ticket_read(Ticket.objects.filter(license_id=license_id), ticket_id, license_id=license_id)
    item = ticket_page_from_keys(*statement, False, "updated_at", events=True, license_id=license_id)[0]
    return item["doc"], item["updated_at"]


def ticket_read(queryset, ticket_id, *, license_id) -> tuple:
    """(document with events, `updated_at`) of one ticket (IndexError when it is not there): the version its
    ETag names comes from the statement that built the document (PostgreSQL gives it as ISO text;
    tickets.collisions reads both)."""
    page = queryset.filter(pk=ticket_id).order_by("updated_at", "pk")[:1]
    item = ticket_page(page, "updated_at", events=True, license_id=license_id)[0]
    return item["doc"], item["updated_at"]
