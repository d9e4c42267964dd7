"""Ticket reads that are more than a one-line queryset: the search (`GET /v1/tickets`).

`ticket_search(license, params)` runs the whole search in this order, each step a call below:

1. the parameters: unknown names, the filters' values (TicketFilterSet) and the page's (KeysetPagination) are
   checked; any invalid one is a 400 naming it, before any query;
2. the teams, tags and agents the filters name must be the license's: one query, only when the search names
   any (a 400 naming the parameter otherwise);
3. the page: one statement that returns the finished documents (tickets.output), with their events when
   `eventsScope=all` (one more query); on PostgreSQL its keys' SQL is bound into the search's shape, compiled
   once per process (tickets.search_shapes), and a search whose shape is remembered builds no FilterSet;
4. the total: `tickets.totals.exact_count` of the filtered tickets (or, for a team inbox, of the team's links,
   `TicketFilterSet.count_queryset`), from the cache unless a write to the license made it stale.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import connection
from django.db.models import CharField, Value
from django.http import QueryDict
from django.utils import timezone as dj_timezone
from django_filters.utils import translate_validation
from rest_framework.exceptions import ValidationError

from accounts.models import License
from helpdesk.api.pagination import PAGINATION_PARAMS, KeysetPagination
from helpdesk.api.relative_dates import RelativeDate
from tickets import search_shapes, totals
from tickets.filters import TicketFilterSet, count_digest, parse_params
from tickets.models import Ticket
from tickets.output import ticket_page, ticket_page_and_generation, ticket_page_from_keys

SORT_FIELDS = {"createdAt": "created_at", "updatedAt": "updated_at", "lastMessageAt": "last_message_at"}


@dataclass(frozen=True)
class TicketSearch:
    """One page of a search: its documents (in the response's order), the filtered total, the page's cursors."""

    documents: list
    total: int
    paginator: KeysetPagination

    def headers(self, request, link_params: QueryDict | None = None) -> dict[str, str]:
        """X-Total-Results, X-Total-Pages and the Link header's cursor URLs (built from `request`'s URL, with
        the searched parameters or `link_params`)."""
        return self.paginator.response_headers(request, self.total, link_params)


def ticket_filterset(license: License, params: QueryDict, *, check_ids: bool = True):
    """Steps 1 and 2 of the search: the valid TicketFilterSet of `params` over the license's tickets and its
    KeysetPagination (parsed), or a ValidationError (400) naming the first invalid parameter. Also what a saved
    view's filters are validated and counted with (tickets.saved_views); `check_ids=False` lets an ID that no
    longer exists filter nothing but match nothing (a view saved before its team was deleted)."""
    params = TicketFilterSet.check_params(params, frozenset(PAGINATION_PARAMS))
    filterset = TicketFilterSet(params, Ticket.objects.for_license(license), license=license)
    if not filterset.is_valid():
        raise translate_validation(filterset.errors)
    paginator = KeysetPagination(sort_fields=SORT_FIELDS)
    paginator.parse(params)
    if check_ids:
        _check_related_ids(license, filterset.form.cleaned_data)
    return filterset, paginator


def ticket_count(license: License, filterset: TicketFilterSet) -> int:
    """Step 4: the exact total of a valid filter set (tickets.totals)."""
    if _moving(filterset.form.cleaned_data):
        return totals.exact_count(lambda: filterset.count_queryset(filterset.qs), license, cached=False)
    digest = filterset.count_digest()
    return totals.exact_count(lambda: filterset.count_queryset(filterset.qs), license, digest)


def _moving(data: dict) -> bool:
    """Whether a bound of the search moves with the clock (`createdDateFrom=-30d`): no later search shares its
    total, which is then counted and not cached (tickets.totals.exact_count)."""
    return any(isinstance(value, RelativeDate) and value.moves_with_the_clock for value in data.values())


def ticket_counts(license: License, filtersets) -> list[int]:
    """`ticket_count` of each filter set, the cached ones read in one cache round trip (the views' counts)."""
    filtersets = list(filtersets)
    return totals.exact_counts(
        [lambda f=f: f.count_queryset(f.qs) for f in filtersets],
        license,
        [f.count_digest() for f in filtersets],
    )


def ticket_search(license: License, params: QueryDict, *, check_ids: bool = True) -> TicketSearch:
    """Search the license's tickets with the query parameters `params` (the contract's, see tickets.filters and
    helpdesk.api.pagination); a ValidationError (400) names the first invalid parameter."""
    if connection.vendor == "postgresql":
        return _search_postgresql(license, params, check_ids)
    filterset, paginator = ticket_filterset(license, params, check_ids=check_ids)
    items = paginator.page(
        filterset.qs,
        fetch=lambda page: ticket_page(
            page,
            paginator.sort_field,
            events=_with_events(filterset.form.cleaned_data),
            license_id=license.pk,
        ),
    )
    total = ticket_count(license, filterset)
    return TicketSearch([item["doc"] for item in items], total, paginator)


def _search_postgresql(license: License, params: QueryDict, check_ids: bool) -> TicketSearch:
    """`ticket_search` on PostgreSQL: the page's keys bound into the search's shape (tickets.search_shapes).

    A search whose shape is remembered builds no FilterSet: its values are cleaned by the FilterSet's own form
    fields (`parse_params`), bound into the shape's SQL, and its total's digest is made from them; the FilterSet
    is built only when its count misses. Anything else (an invalid value, whose 400 the FilterSet's form gives;
    a shape not yet remembered or not bindable) takes `ticket_filterset` and `search_shapes.keys_sql`.
    Measured (bench/README.md, issue 34, `search3` branch, bench/cpu.py --instructions, 100k set): the
    FilterSet's construction (its filters' copies and the license's queryset) cost the inbox search 0.53 M
    instructions (5.34 M -> 4.81 M)."""
    params = TicketFilterSet.check_params(params, frozenset(PAGINATION_PARAMS))
    data = parse_params(TicketFilterSet, params)
    filterset = None
    if data is None:  # an invalid value: the FilterSet's form names it
        filterset, paginator = ticket_filterset(license, params, check_ids=check_ids)
        data = filterset.form.cleaned_data
    else:
        paginator = KeysetPagination(sort_fields=SORT_FIELDS)
        paginator.parse(params)
        if check_ids:
            _check_related_ids(license, data)
    now = dj_timezone.now()
    keys = search_shapes.bound_keys(license, data, paginator, now) if filterset is None else None
    if keys is None:
        if filterset is None:
            filterset = TicketFilterSet.parsed(
                params, Ticket.objects.for_license(license), license=license, cleaned=data
            )
        keys = search_shapes.keys_sql(license, filterset, paginator)
    moving = filterset is None and _moving(data)
    generation = None
    if filterset is None and not moving and totals.generation_unloaded(license):
        # the generation its total is looked up at, read by the page's statement instead of one of its own
        rows, generation = ticket_page_and_generation(
            *keys, paginator.sort_field, events=_with_events(data), license_id=license.pk
        )
    else:
        rows = ticket_page_from_keys(
            *keys, paginator.sort_field, events=_with_events(data), license_id=license.pk
        )
    items = paginator.page_rows(rows, Ticket)
    if filterset is not None:
        total = ticket_count(license, filterset)
    else:
        digest = None if moving else count_digest(data, now, search_shapes.recorded_parts(license, data))

        def counted():  # only on a miss (or a moving bound): bound into its count's shape, else compiled
            return search_shapes.count_sql(license, data, now)

        total = totals.exact_count(counted, license, digest, cached=not moving, generation=generation)
    return TicketSearch([item["doc"] for item in items], total, paginator)


def _with_events(data: dict) -> bool:
    return data["eventsScope"] == "all"


def _check_related_ids(license: License, data: dict) -> None:
    """A 400 naming the parameter when an ID it names is not one of the license's teams, tags or agents.

    One query for all of them (a UNION of one `SELECT` per kind), none when the search names no ID."""
    wanted: dict[tuple[str, uuid.UUID], str] = {}
    models = {}
    for param, model in TicketFilterSet.RELATED.items():
        value = data.get(param)
        for pk in value if isinstance(value, list) else [value]:
            if isinstance(pk, uuid.UUID):  # not None, not `none`
                wanted.setdefault((model._meta.label, pk), param)
                models.setdefault(model._meta.label, (model, set()))[1].add(pk)
    if not wanted:
        return
    selects = [
        model.objects.for_license(license)
        .filter(pk__in=ids)
        .values_list(Value(label, output_field=CharField()), "pk")
        for label, (model, ids) in models.items()
    ]
    found = set(selects[0].union(*selects[1:], all=True))
    for key, param in wanted.items():
        if key not in found:
            raise ValidationError({param: [f"'{key[1]}' does not exist in this license."]})
