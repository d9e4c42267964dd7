"""Keyset ("cursor") pagination for list endpoints sorted by a timestamp plus the primary key (tickets, audit log).

Parameters
----------
``page``         integer >= 1, default 1: offset pages of ``pageSize`` items (page 1 is the first).
``pageSize``     integer 1..100, default 20.
``order``        ``desc`` (default) or ``asc``.
``sortBy``       one of the names the view allows (``sort_fields``), default ``createdAt``.
``next.value``   with ``next.ID``: the page that follows the item whose sort value and ID these are (the last item
``next.ID``      of the page the client holds).
``prev.value``   with ``prev.ID``: the page that precedes the item whose sort value and ID these are (the first
``prev.ID``      item of the page the client holds).

Cursor pages are always returned in the request's ``order``. ``*.value`` is an ISO 8601 timestamp (``Z`` or an
offset; without one it is UTC); ``*.ID`` is the primary key (a UUID for tickets).
Any invalid value is a 400 in the contract's error shape naming the parameter: ``pageSize`` out of 1..100, ``page``
< 1, an unknown ``order``/``sortBy``, a bad timestamp or ID, a half cursor (``next.value`` without ``next.ID`` or
the reverse), ``next.*`` together with ``prev.*``, a parameter that is present but empty, and ``page`` other than
1 together with a cursor (a cursor already says where the page is; ``page=1`` is tolerated as the default).

Semantics
---------
Items are ordered by the composite key (sort value, ID), both in the requested direction, so items with equal
timestamps have a stable order and a cursor walk never skips or repeats one, even when rows are added or
removed between requests. The cursor condition is a row-value comparison ``(sort_field, id) < (value, ID)``
that PostgreSQL serves as a range scan of an index ``(license, sort_field, id)``: a cursor deep in the set costs
the same as the first page (offset ``page`` numbers do not: use the Link header's cursors to walk far).
The sort field must be NOT NULL.

Responses list the items as a bare array. Every response carries:

``X-Total-Results``  the number of items matching the filters (the whole filtered set, also on cursor requests)
``X-Total-Pages``    ``ceil(X-Total-Results / pageSize)`` (0 when nothing matches)
``Link``             ``<url>; rel="next"`` and ``<url>; rel="prev"``: cursor URLs built from the last/first item of
                     the page, keeping every other parameter of the request and dropping ``page``. ``rel="next"``
                     is left out when this is known to be the last page, ``rel="prev"`` on page 1 and when a
                     ``prev`` walk reached the start; an empty page has no Link header.

Cursor values in Link URLs carry microseconds. Timestamps in response bodies have milliseconds: a client that builds
``next.value`` from an item's rendered ``createdAt`` still gets an exact cursor, because a millisecond value is
refined inside the same query to the stored value of the item ``*.ID`` when that item's value lies within that
millisecond.

Each request costs two SQL queries whatever the page size: the count (`get_count`, a hook a subclass may
serve from a cache) and the page (``pageSize + 1`` rows, the extra one telling whether more follow).

Usage: ``pagination_class = KeysetPagination`` on a DRF view with ``sort_fields = {"createdAt": "created_at"}``;
or directly: ``KeysetPagination(sort_fields=...).paginate_queryset(queryset, request)``. The paginator returns the
page's items (model instances or ``.values()`` dicts); the view renders them and hands them to
``get_paginated_response(data)`` (or copies ``paginator.headers`` onto its own response). A selector that counts
and fetches in its own way calls the steps itself: ``parse(params)`` (validation, no query), ``page(queryset,
fetch=...)`` and ``response_headers(request, count)`` (tickets.selectors.ticket_search).
"""

from __future__ import annotations

import datetime
import functools
import math
from dataclasses import dataclass
from urllib.parse import quote_plus

from django import forms
from django.core.exceptions import FieldDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.signals import setting_changed
from django.db import models
from django.db.models import F, Func, Subquery, Value
from django.db.models.functions import Coalesce
from django.dispatch import receiver
from django.http import QueryDict
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from helpdesk.api.forms import cleaned_without_form
from helpdesk.api.relative_dates import ISO_TIMESTAMP

PAGE = "page"
PAGE_SIZE = "pageSize"
ORDER = "order"
SORT_BY = "sortBy"
NEXT_VALUE, NEXT_ID, PREV_VALUE, PREV_ID = "next.value", "next.ID", "prev.value", "prev.ID"
CURSOR_PARAMS = (NEXT_VALUE, NEXT_ID, PREV_VALUE, PREV_ID)
_NOT_LINKED = frozenset((PAGE, *CURSOR_PARAMS))  # what a Link URL drops of the request's parameters
PAGINATION_PARAMS = (PAGE, PAGE_SIZE, ORDER, SORT_BY, *CURSOR_PARAMS)

MAX_PAGE = 10_000_000
ONE_MS = datetime.timedelta(milliseconds=1)


def _error(param: str, message: str) -> ValidationError:
    return ValidationError({param: [message]})


def parse_timestamp(param: str, text: str) -> datetime.datetime:
    """An ISO 8601 timestamp (naive means UTC) -> aware UTC datetime; a 400 naming `param` otherwise."""
    try:
        if not ISO_TIMESTAMP.fullmatch(text):
            raise ValueError
        value = datetime.datetime.fromisoformat(text.replace("z", "Z"))
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        raise _error(
            param, f"'{text}' is not an ISO 8601 timestamp (e.g. 2026-04-30T22:02:08.901Z)."
        ) from None


class RowCompare(Func):
    """``(lhs1, lhs2) <op> (rhs1, rhs2)`` as one row-value comparison (an index range scan on PostgreSQL)."""

    output_field = models.BooleanField()

    def __init__(self, lhs1, lhs2, op, rhs1, rhs2):
        assert op in ("<", ">")
        super().__init__(lhs1, lhs2, rhs1, rhs2, output_field=models.BooleanField())
        self.op = op

    def as_sql(self, compiler, connection, **extra_context):
        (a, a_params), (b, b_params), (c, c_params), (d, d_params) = (
            compiler.compile(expression) for expression in self.get_source_expressions()
        )
        if connection.features.supports_tuple_lookups:
            return f"({a}, {b}) {self.op} ({c}, {d})", (*a_params, *b_params, *c_params, *d_params)
        return (
            f"({a} {self.op} {c} OR ({a} = {c} AND {b} {self.op} {d}))",
            (*a_params, *c_params, *a_params, *c_params, *b_params, *d_params),
        )


@dataclass(frozen=True)
class Cursor:
    """A validated cursor: the direction (``next``/``prev``), the sort value and the (unparsed) primary key."""

    direction: str
    value: datetime.datetime
    pk: str


class KeysetPagination(BasePagination):
    """Offset pages and keyset cursors over (sort field, pk); see the module docstring for the parameters.

    Hooks: `get_count(queryset)` (the total; override to serve it from a cache) and the class attributes below.
    A view may define ``sort_fields`` / ``default_sort`` / ``default_order``; they win over the paginator's.
    """

    sort_fields: dict[str, str] = {"createdAt": "created_at"}
    default_sort = "createdAt"
    default_order = "desc"
    default_page_size = 20
    max_page_size = 100
    query_param_names = frozenset(
        PAGINATION_PARAMS
    )  # allowed next to a FilterSet's (helpdesk.api.filtersets)

    def __init__(self, *, sort_fields=None, default_sort=None, default_order=None):
        if sort_fields is not None:
            self.sort_fields = sort_fields
        if default_sort is not None:
            self.default_sort = default_sort
        if default_order is not None:
            self.default_order = default_order

    # --- hooks ---------------------------------------------------------------------------------------------

    def get_count(self, queryset) -> int:
        """The number of items in the filtered queryset (one query). Override to use a cached count."""
        return queryset.count()

    def fetch_page(self, page_queryset) -> list:
        """The items of the ordered, sliced `page_queryset` (one query). Override to fetch them otherwise; an
        item is a model instance, or a dict with the primary key's attname (or `pk`/`id`) and the sort field.
        A dict may hold the cursor's text for both (the ID as text, the value as `cursor_text` writes it)."""
        return list(page_queryset)

    # --- DRF interface -------------------------------------------------------------------------------------

    def paginate_queryset(self, queryset, request, view=None):
        """The items of the requested page (a list), in the request's order; a 400 for invalid parameters."""
        self.request = request
        self._configure(view)
        self.parse(getattr(request, "query_params", None) or request.GET)
        self.page(queryset)
        self.count = self.get_count(queryset)
        return self.items

    def parse(self, query_params: QueryDict) -> None:
        """Validate the pagination parameters (a 400 naming the first invalid one); runs no query."""
        self._parse(query_params)

    def page(self, queryset, fetch=None) -> list:
        """The items of the parsed page of `queryset`, in the request's order, fetched by `fetch(page_queryset)`
        (default: `fetch_page`) in one query. Call `parse` first."""
        fetch = fetch or self.fetch_page
        return self.page_rows(fetch(self.page_queryset(queryset)), queryset.model)

    def page_queryset(self, queryset):
        """The ordered, sliced queryset of the parsed page (``pageSize + 1`` rows in the walk's order); a 400 for
        an invalid cursor ID. What `page` fetches; `page_rows` then makes the page of its rows."""
        model = queryset.model
        descending = self.order == "desc"
        size = self.page_size
        if self.cursor is None:
            offset = (self.page_number - 1) * size
            return queryset.order_by(*self._ordering(descending))[offset : offset + size + 1]
        forward = self.cursor.direction == "next"
        op = "<" if descending == forward else ">"
        condition = RowCompare(
            F(self.sort_field), F("pk"), op, self._cursor_value(model), self._cursor_pk(model)
        )
        walk_descending = descending if forward else not descending
        return queryset.filter(condition).order_by(*self._ordering(walk_descending))[: size + 1]

    def page_rows(self, rows: list, model) -> list:
        """The page's items from the rows `page_queryset` selects (fetched in its order), in the request's order;
        sets `has_next` and `has_prev` for the headers."""
        self.pk_name = model._meta.pk.attname
        size = self.page_size
        if self.cursor is None:
            self.has_next, self.has_prev = len(rows) > size, self.page_number > 1
            items = rows[:size]
        else:
            more, items = len(rows) > size, rows[:size]
            if self.cursor.direction == "next":
                self.has_next, self.has_prev = more, True
            else:
                items.reverse()
                self.has_next, self.has_prev = True, more
        self.items = items
        return items

    def get_paginated_response(self, data):
        return Response(data, headers=self.headers)

    def get_paginated_response_schema(self, schema):
        return schema

    def get_schema_operation_parameters(self, view):
        sort_fields = getattr(view, "sort_fields", self.sort_fields)
        model = getattr(getattr(view, "queryset", None), "model", None)
        id_schema = _id_schema(model._meta.pk if model is not None else None)

        def param(name, schema, description):
            return {
                "name": name,
                "in": "query",
                "required": False,
                "description": description,
                "schema": schema,
            }

        return [
            param(
                PAGE,
                {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
                "Page number (offset pages).",
            ),
            param(
                PAGE_SIZE,
                {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                    "default": self.default_page_size,
                },
                "Items per page.",
            ),
            param(
                ORDER,
                {"type": "string", "enum": ["asc", "desc"], "default": self.default_order},
                "Sort order.",
            ),
            param(
                SORT_BY,
                {"type": "string", "enum": list(sort_fields), "default": self.default_sort},
                "Sort field.",
            ),
            param(
                NEXT_VALUE,
                {"type": "string", "format": "date-time"},
                "Cursor: sort value of the last item held.",
            ),
            param(NEXT_ID, id_schema, "Cursor: ID of the last item held."),
            param(
                PREV_VALUE,
                {"type": "string", "format": "date-time"},
                "Cursor: sort value of the first item held.",
            ),
            param(PREV_ID, id_schema, "Cursor: ID of the first item held."),
        ]

    # --- headers -------------------------------------------------------------------------------------------

    @property
    def total_pages(self) -> int:
        return self._total_pages(self.count)

    def _total_pages(self, count: int) -> int:
        return math.ceil(count / self.page_size) if count else 0

    @property
    def headers(self) -> dict[str, str]:
        return self.response_headers(self.request, self.count)

    def response_headers(self, request, count: int, link_params: QueryDict | None = None) -> dict[str, str]:
        """X-Total-Results, X-Total-Pages and Link for the fetched page, whose filtered set has `count` items.
        The Link URLs carry the parsed parameters, or `link_params` where the request's differ from what was
        parsed (a saved view's tickets: its filters are not the request's)."""
        headers = {"X-Total-Results": str(count), "X-Total-Pages": str(self._total_pages(count))}
        links = []
        base = None  # the URL both links share, built once
        if self.items and self.has_next:
            base = self._link_base(request, link_params)
            links.append(f'<{base}{self._cursor_params("next", self.items[-1])}>; rel="next"')
        if self.items and self.has_prev:
            base = base or self._link_base(request, link_params)
            links.append(f'<{base}{self._cursor_params("prev", self.items[0])}>; rel="prev"')
        if links:
            headers["Link"] = ", ".join(links)
        return headers

    def cursor_url(self, request, direction: str, item, link_params: QueryDict | None = None) -> str:
        """This request's URL with the cursor of `item` (`next` or `prev`), without `page` and old cursors."""
        return self._link_base(request, link_params) + self._cursor_params(direction, item)

    # The URL as `request.build_absolute_uri(f"{request.path}?{params.urlencode()}")` of a copy of the
    # parameters without page and cursors, then the cursor's two appended, spelled it: the absolute URL and
    # the kept parameters encoded once for both links, not the QueryDict deep-copied and everything encoded
    # and checked again per link. Measured (issue 34, 3x3,000 calls alternately, process CPU): a page's two
    # links 52-53 us -> 15 us (~0.08 M instructions of a search's ~9 M).
    # (The query part is quote_plus'd ASCII, which build_absolute_uri's iri_to_uri leaves as it is.)

    def _link_base(self, request, link_params: QueryDict | None) -> str:
        params = self.query_params if link_params is None else link_params
        kept = "&".join(
            f"{_quoted(name)}={_quoted(str(value))}"
            for name, values in params.lists()
            if name not in _NOT_LINKED
            for value in values
        )
        return f"{_absolute_path(request)}?{kept}{'&' if kept else ''}"

    def _cursor_params(self, direction: str, item) -> str:
        value, pk = self._key(item)
        return (
            f"{_quoted(f'{direction}.value')}={_quoted(cursor_text(value))}"
            f"&{_quoted(f'{direction}.ID')}={_quoted(str(pk))}"
        )

    # --- internals -----------------------------------------------------------------------------------------

    def _configure(self, view):
        for name in ("sort_fields", "default_sort", "default_order"):
            if view is not None and hasattr(view, name):
                setattr(self, name, getattr(view, name))

    def _parse(self, query_params: QueryDict):
        self.query_params = query_params
        for name in PAGINATION_PARAMS:
            if name in query_params and not query_params.get(name, "").strip():
                raise _error(name, "This parameter may not be empty.")
        form_class = _params_form(tuple(self.sort_fields), self.max_page_size)
        data = cleaned_without_form(form_class.base_fields, query_params)
        if data is None:
            form = form_class(query_params)
            form.is_valid()
            name, messages = next(iter(form.errors.items()))
            raise ValidationError({name: list(messages)})
        self.page_number = data[PAGE] or 1
        self.page_size = data[PAGE_SIZE] or self.default_page_size
        self.order = data[ORDER] or self.default_order
        self.sort_by = data[SORT_BY] or self.default_sort
        self.sort_field = self.sort_fields[self.sort_by]
        self.cursor = self._parse_cursor(query_params)

    def _parse_cursor(self, query_params) -> Cursor | None:
        given = {name for name in CURSOR_PARAMS if name in query_params}
        if not given:
            return None
        if given & {NEXT_VALUE, NEXT_ID} and given & {PREV_VALUE, PREV_ID}:
            name = PREV_VALUE if PREV_VALUE in given else PREV_ID
            raise _error(name, "A request may carry a next cursor or a prev cursor, not both.")
        direction = "next" if given & {NEXT_VALUE, NEXT_ID} else "prev"
        value_name, id_name = f"{direction}.value", f"{direction}.ID"
        for name, other in ((value_name, id_name), (id_name, value_name)):
            if name not in given:
                raise _error(name, f"Required together with {other}.")
        if self.page_number != 1:
            raise _error(PAGE, "A cursor already selects the page: leave out page (or send page=1).")
        value = parse_timestamp(value_name, query_params[value_name].strip())
        return Cursor(direction, value, query_params[id_name].strip())

    def _cursor_pk(self, model):
        pk_field = model._meta.pk
        name = f"{self.cursor.direction}.ID"
        try:
            pk = pk_field.to_python(self.cursor.pk)
        except (DjangoValidationError, ValueError, TypeError):
            raise _error(name, f"'{self.cursor.pk}' is not a valid ID.") from None
        if isinstance(pk_field, models.IntegerField) and not -(2**63) < pk < 2**63:
            raise _error(name, f"'{self.cursor.pk}' is not a valid ID.")
        return Value(pk, output_field=pk_field)

    def _cursor_value(self, model):
        """The cursor's sort value; a millisecond value is refined to the stored value of the cursor's item."""
        try:
            field = model._meta.get_field(self.sort_field)
        except FieldDoesNotExist:  # an annotation
            field = models.DateTimeField()
        value = self.cursor.value
        literal = Value(value, output_field=field)
        if not self.cursor_refined():
            return literal
        try:
            pk = model._meta.pk.to_python(self.cursor.pk)
        except (DjangoValidationError, ValueError, TypeError):
            return literal  # _cursor_pk reports it
        stored = model._base_manager.filter(
            pk=pk, **{f"{self.sort_field}__gte": value, f"{self.sort_field}__lt": value + ONE_MS}
        ).values(self.sort_field)[:1]
        return Coalesce(Subquery(stored, output_field=field), literal, output_field=field)

    def cursor_refined(self) -> bool:
        """Whether the cursor's value is refined to the stored value of its item (a millisecond value, see the
        module docstring): the page's SQL then carries a subquery."""
        value = self.cursor.value
        return not (
            value.microsecond % 1000 or value > datetime.datetime.max.replace(tzinfo=datetime.UTC) - ONE_MS
        )

    def _ordering(self, descending: bool):
        if descending:
            return F(self.sort_field).desc(), F("pk").desc()
        return F(self.sort_field).asc(), F("pk").asc()

    def _key(self, item):
        if isinstance(item, dict):
            pk = item.get(self.pk_name, item.get("pk", item.get("id")))
            return item[self.sort_field], pk
        return getattr(item, self.sort_field), item.pk


# The Link URLs' pieces remembered per process: each name and value quoted once (`quote_plus` is a function of
# its text alone), and the absolute URL of the request's path per scheme, path and what `get_host()` reads of
# the request: `_HOST_META` (Django's `_get_raw_host` and `get_port`; tests/test_pagination.py fails when it
# reads anything else), so a remembered URL costs no `get_host()` (its ALLOWED_HOSTS check: a host is
# remembered only once `build_absolute_uri` accepted it, and any change of settings forgets them all).
# Measured (bench/README.md, "Issue 34: the inbox within twice its floor"; bench/cpu.py --instructions, 20k
# set): the inbox search 3.51 M -> 3.41 M instructions (get_host() alone 0.05 M of it).
_quoted = functools.lru_cache(maxsize=2048)(quote_plus)
_HOST_META = ("HTTP_X_FORWARDED_HOST", "HTTP_HOST", "SERVER_NAME", "HTTP_X_FORWARDED_PORT", "SERVER_PORT")
_absolute_urls: dict[tuple, str] = {}
MOST_ABSOLUTE_URLS = 256


def _absolute_path(request) -> str:
    """`request.build_absolute_uri(request.path)`, remembered (above)."""
    meta = request.META
    key = (request.scheme, request.path, *[meta.get(name) for name in _HOST_META])
    url = _absolute_urls.get(key)
    if url is None:
        url = request.build_absolute_uri(request.path)
        if len(_absolute_urls) >= MOST_ABSOLUTE_URLS:
            _absolute_urls.clear()
        _absolute_urls[key] = url
    return url


@receiver(setting_changed)
def _forget_absolute_urls(**kwargs) -> None:
    _absolute_urls.clear()


def cursor_text(value) -> str:
    """A cursor value as the Link header carries it: UTC with microseconds (`2026-04-30T22:02:08.901234Z`)."""
    if isinstance(value, datetime.datetime):
        value = value.astimezone(datetime.UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond:06d}Z"
    return str(value)


@functools.cache
def _params_form(sort_fields: tuple[str, ...], max_page_size: int):
    """The form of the pagination parameters, one class per view configuration."""
    fields = {
        PAGE: forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE),
        PAGE_SIZE: forms.IntegerField(required=False, min_value=1, max_value=max_page_size),
        ORDER: forms.ChoiceField(required=False, choices=[("asc", "asc"), ("desc", "desc")]),
        SORT_BY: forms.ChoiceField(required=False, choices=[(name, name) for name in sort_fields]),
    }
    return type("PaginationParamsForm", (forms.Form,), fields)


def _id_schema(pk_field) -> dict:
    """The OpenAPI schema of a cursor's ID: what `_cursor_pk` accepts for the view's model."""
    if isinstance(pk_field, models.UUIDField):
        return {"type": "string", "format": "uuid"}
    if isinstance(pk_field, models.IntegerField):
        return {"type": "integer", "format": "int64"}
    return {"type": "string"}
