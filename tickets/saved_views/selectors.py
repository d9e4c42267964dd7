"""View reads: a view's filters as the search's query string, and the exact counts of views."""

from __future__ import annotations

from django.http import QueryDict

from accounts.models import License
from tickets import selectors


def filters_query(filters: dict) -> QueryDict:
    """A view's filters as the query string the search reads."""
    query = QueryDict(mutable=True)
    for name, value in filters.items():
        query.setlist(name, [_text(item) for item in value] if isinstance(value, list) else [_text(value)])
    return query


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def view_counts(license: License, views, *, timezone: str | None = None) -> list[dict]:
    """`[{ID, count}]`: each view's exact total, as its search's `X-Total-Results` (tickets.totals, so a count
    cached under the license's generation costs one cache round trip, and a view's filter set is one a write
    carries over once counting it proved expensive). A team, tag or agent deleted since the view was saved
    matches nothing. The cached counts come in one cache round trip (`tickets.totals.exact_counts`)."""
    views, filtersets = list(views), []
    for view in views:
        params = filters_query(view.filters)
        if timezone is not None:
            params["timezone"] = timezone
        filtersets.append(selectors.ticket_filterset(license, params, check_ids=False)[0])
    counts = selectors.ticket_counts(license, filtersets)
    return [{"ID": view.pk, "count": count} for view, count in zip(views, counts, strict=True)]
