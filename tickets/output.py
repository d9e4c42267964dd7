"""The contract's Ticket documents, built in bulk: the output of ticket search, the product's hottest path.

`ticket_page(page_queryset, sort_field)` turns an ordered, sliced queryset of tickets (the filtered search with
its cursor or offset) into one item per ticket: ``{"id", <sort_field>, "doc"}``, where `doc` is what the response
lists. The paginator reads `id` and the sort value for its cursors; the view renders the docs.

* **PostgreSQL**: one query. The ORM compiles the page's IDs and sort values (filters, cursor, order, limit);
  that SQL becomes a subquery of a statement in which PostgreSQL builds each document with `json_build_object`
  (timestamps formatted; parent, assignment, teams, tags, followers and children by subqueries per ticket).
  Python neither loads the rows' columns nor builds dicts: each document arrives as JSON text and is embedded
  in the response as an `orjson.Fragment`; the items' `id` and sort value arrive as the cursor's text
  (`helpdesk.api.pagination.cursor_text`). This is what makes a search request cheap in CPU (see bench/).
* **SQLite** (the embedded default): the same documents built in Python from `.values()` rows and one UNION
  query for the related IDs.

The two builders must agree on every field; tests/test_tickets_output.py compares them ticket by ticket.
Events (`events`) are added in Python by both (tickets.events_output), only when asked: a single read, or a
search with `eventsScope=all`; the default search path does not change.
Timestamps are UTC with milliseconds (`2026-04-30T22:02:08.901Z`, truncated like `helpdesk.api.renderers.iso`);
teamIDs/tagIDs/followers are sorted; children are in shortID order.
"""

from __future__ import annotations

import functools
import uuid

import orjson
from django.db import connection
from django.db.models import CharField, Value

from accounts.models import Agent, Team
from helpdesk.api.renderers import iso
from helpdesk.context import SYSTEM_ACTOR_ID
from tickets.events_output import events_by_ticket
from tickets.models import Ticket

# --- PostgreSQL: documents built by the database ----------------------------------------------------------


def _ts(column: str) -> str:
    # MS truncates (like iso()); AT TIME ZONE 'UTC' makes the text UTC whatever the session's TimeZone.
    return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""


def _ids(table: str, column: str) -> str:
    return f"ARRAY(SELECT r.{column} FROM {table} r WHERE r.ticket_id = t.id ORDER BY r.{column})"


@functools.cache
def _document_sql() -> str:
    """The `json_build_object(...)` of one ticket `t`.

    Parent, assignment and the lists are scalar subqueries rather than joins: the statement is planned on
    every request, and PostgreSQL plans subqueries in a fraction of the time of a five-way join (0.32 vs 0.51 ms
    measured), for the same execution time.
    """
    teams, tags, followers = (
        getattr(Ticket, name).through._meta.db_table for name in ("teams", "tags", "followers")
    )
    ticket = Ticket._meta.db_table
    return f"""json_build_object(
        'ID', t.id, 'licenseID', t.license_id,
        'createdAt', {_ts("t.created_at")}, 'updatedAt', {_ts("t.updated_at")},
        'createdBy', COALESCE(t.created_by, '{SYSTEM_ACTOR_ID}'::uuid),
        'updatedBy', COALESCE(t.updated_by, '{SYSTEM_ACTOR_ID}'::uuid), 'createdByType', t.created_by_type,
        'shortID', t.short_id, 'lastMessageAt', {_ts("t.last_message_at")},
        'parent', (SELECT json_build_object('ID', pt.id, 'shortID', pt.short_id, 'subject', pt.subject)
                   FROM {ticket} pt WHERE pt.id = t.parent_id),
        'children', COALESCE((
            SELECT json_agg(json_build_object('ID', c.id, 'shortID', c.short_id, 'subject', c.subject)
                            ORDER BY CASE WHEN c.short_id ~ '^[0-9]{{1,18}}$' THEN c.short_id::bigint ELSE 0 END,
                                     c.id)
            FROM {ticket} c WHERE c.license_id = t.license_id AND c.parent_id = t.id), '[]'::json),
        'status', t.status, 'priority', t.priority, 'subject', t.subject,
        'teamIDs', {_ids(teams, "team_id")},
        'requester', json_build_object('email', t.requester_email, 'name', t.requester_name),
        'peopleInTheLoop', t.people_in_the_loop,
        'tagIDs', {_ids(tags, "tag_id")},
        'followers', {_ids(followers, "agent_id")},
        'assignment', json_build_object(
            'team', (SELECT json_build_object('ID', at.id, 'name', at.name)
                     FROM {Team._meta.db_table} at WHERE at.id = t.assignment_team_id),
            'agent', (SELECT json_build_object('ID', aa.id, 'name', aa.name)
                      FROM {Agent._meta.db_table} aa WHERE aa.id = t.assignment_agent_id)),
        'customFields', t.custom_fields, 'ratingRequeestSent', t.rating_requeest_sent,
        'rating', CASE WHEN t.rating_score = '' THEN NULL
                  ELSE json_build_object('score', t.rating_score, 'comment', t.rating_comment,
                                         'ratedAt', {_ts("t.rated_at")}) END,
        'silo', t.silo, 'language', t.language)::text"""


def _page_sql(keys_sql: str, descending: bool) -> str:
    # The keys come back as the cursor's text (`helpdesk.api.pagination.cursor_text`): the paginator reads only
    # the first and the last, and loading a hundred timestamps and UUIDs as Python objects cost ~0.3 ms.
    direction = "DESC" if descending else "ASC"
    return f"""
        SELECT k.id::text,
               to_char(k.sort_value AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
               {_document_sql()}
        FROM ({keys_sql}) AS k(id, sort_value)
        JOIN {Ticket._meta.db_table} t ON t.id = k.id
        ORDER BY k.sort_value {direction}, k.id {direction}"""


def _page_postgresql(page_queryset, sort_field: str, keep_json: bool = False) -> list[dict]:
    keys = page_queryset.values_list("id", sort_field)
    keys_sql, params = keys.query.sql_with_params()
    descending = _is_descending(page_queryset)
    with connection.cursor() as cursor:
        cursor.execute(_page_sql(keys_sql, descending), params)
        rows = cursor.fetchall()
    if keep_json:  # the events are spliced into the text (_with_events)
        return [{"id": pk, sort_field: value, "doc": None, "json": doc} for pk, value, doc in rows]
    return [{"id": pk, sort_field: value, "doc": orjson.Fragment(doc)} for pk, value, doc in rows]


def _is_descending(queryset) -> bool:
    first = queryset.query.order_by[0]
    return getattr(first, "descending", False) if not isinstance(first, str) else first.startswith("-")


# --- SQLite (and any other database): documents built in Python ------------------------------------------

# The columns a ticket dict needs (never search_text / search_vector), parent and assignment joined.
TICKET_COLUMNS = (
    "id", "license_id", "created_at", "updated_at", "created_by", "updated_by", "created_by_type", "short_id",
    "last_message_at", "status", "priority", "subject", "requester_email", "requester_name",
    "people_in_the_loop", "custom_fields", "rating_requeest_sent", "rating_score", "rating_comment", "rated_at",
    "silo", "language", "parent_id", "parent__short_id", "parent__subject",
    "assignment_team_id", "assignment_team__name", "assignment_agent_id", "assignment_agent__name",
)  # fmt: skip


def _uuid_str(value):
    return None if value is None else str(value)


def _related_rows(license_id, ticket_ids):
    blank = Value("", output_field=CharField())

    def kind(letter):
        return Value(letter, output_field=CharField())

    through = {
        name: getattr(Ticket, name).through.objects.filter(ticket_id__in=ticket_ids)
        for name in ("teams", "tags", "followers")
    }
    return (
        through["teams"]
        .values_list(kind("t"), "ticket_id", "team_id", blank, blank)
        .union(
            through["tags"].values_list(kind("g"), "ticket_id", "tag_id", blank, blank),
            through["followers"].values_list(kind("f"), "ticket_id", "agent_id", blank, blank),
            Ticket.objects.filter(license_id=license_id, parent_id__in=ticket_ids).values_list(
                kind("c"), "parent_id", "id", "short_id", "subject"
            ),
            all=True,
        )
    )


def _related(license_id, ticket_ids) -> dict:
    """{ticket ID: {"t": teamIDs, "g": tagIDs, "f": followers, "c": children}} in one query."""
    related = {ticket_id: {"t": [], "g": [], "f": [], "c": []} for ticket_id in ticket_ids}
    if not ticket_ids:
        return related
    for letter, ticket_id, other_id, short_id, subject in _related_rows(license_id, ticket_ids):
        if letter == "c":
            related[ticket_id]["c"].append({"ID": str(other_id), "shortID": short_id, "subject": subject})
        else:
            related[ticket_id][letter].append(str(other_id))
    return related


def _sorted(values):
    return sorted(values) if len(values) > 1 else values


def _short_id_number(short_id: str) -> int:
    return int(short_id) if short_id.isascii() and short_id.isdigit() and len(short_id) <= 18 else 0


def _children(children):
    if len(children) > 1:
        children.sort(key=lambda c: (_short_id_number(c["shortID"]), c["ID"]))
    return children


def ticket_dicts(rows) -> list[dict]:
    """The contract's Ticket objects for `rows` (`.values(*TICKET_COLUMNS)` rows), in order."""
    rows = list(rows)
    related = _related(rows[0]["license_id"] if rows else None, [row["id"] for row in rows])
    out = []
    for t in rows:
        more = related[t["id"]]
        team_id, agent_id, parent_id = t["assignment_team_id"], t["assignment_agent_id"], t["parent_id"]
        out.append(
            {
                "ID": str(t["id"]),
                "licenseID": t["license_id"],
                "createdAt": iso(t["created_at"]),
                "updatedAt": iso(t["updated_at"]),
                "createdBy": str(t["created_by"] or SYSTEM_ACTOR_ID),  # null: the system, before the rule
                "updatedBy": str(t["updated_by"] or SYSTEM_ACTOR_ID),
                "createdByType": t["created_by_type"],
                "shortID": t["short_id"],
                "lastMessageAt": iso(t["last_message_at"]),
                "parent": None
                if parent_id is None
                else {
                    "ID": str(parent_id),
                    "shortID": t["parent__short_id"],
                    "subject": t["parent__subject"],
                },
                "children": _children(more["c"]),
                "status": t["status"],
                "priority": t["priority"],
                "subject": t["subject"],
                "teamIDs": _sorted(more["t"]),
                "requester": {"email": t["requester_email"], "name": t["requester_name"]},
                "peopleInTheLoop": t["people_in_the_loop"],
                "tagIDs": _sorted(more["g"]),
                "followers": _sorted(more["f"]),
                "assignment": {
                    "team": None
                    if team_id is None
                    else {"ID": str(team_id), "name": t["assignment_team__name"]},
                    "agent": None
                    if agent_id is None
                    else {"ID": str(agent_id), "name": t["assignment_agent__name"]},
                },
                "customFields": t["custom_fields"],
                "ratingRequeestSent": t["rating_requeest_sent"],
                "rating": None
                if not t["rating_score"]
                else {
                    "score": t["rating_score"],
                    "comment": t["rating_comment"],
                    "ratedAt": iso(t["rated_at"]),
                },
                "silo": t["silo"],
                "language": t["language"],
            }
        )
    return out


def _page_python(page_queryset, sort_field: str) -> list[dict]:
    rows = list(page_queryset.values(*dict.fromkeys((*TICKET_COLUMNS, sort_field))))
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


def ticket_document(queryset, ticket_id, *, license_id):
    """The document of one ticket of `queryset` with its events (IndexError when it is not there)."""
    page = queryset.filter(pk=ticket_id).order_by("created_at", "pk")[:1]
    return ticket_page(page, "created_at", events=True, license_id=license_id)[0]["doc"]
