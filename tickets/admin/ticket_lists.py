"""The ticket list's sidebar: "My open tickets" (where an agent's day starts), every ticket, and the license's
views (shared, and the agent's own private ones) with their exact counts, as GET /v1/views/counts gives them.

A view's tickets are its saved search (tickets.selectors.ticket_filterset, the API's own), so the list and
/v1/views/{ID}/tickets agree. The counts come from tickets.totals (cached under the license's generation, in one
cache round trip per license): the page's number of queries does not grow with the number of tickets.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Q

from accounts.admin.tenancy import admin_agents, admin_license_ids, license_label
from accounts.models import STATUS_ACTIVE, Agent
from tickets import selectors
from tickets.saved_views.models import View
from tickets.saved_views.selectors import filters_query, view_counts

MINE, EVERY = "mine", "all"
MINE_STATUS = "open"


def visible_views(request) -> list[View]:
    """The views this person sees: its licenses' shared views and its own private ones."""
    if not hasattr(request, "_console_views"):
        views = View.objects.select_related("license").order_by("license_id", "ordering", "created_at", "id")
        agents = admin_agents(request)
        if agents is None:  # a superuser: the licenses it is an agent of (not every license's views, counted)
            agents = {
                a.license_id: a for a in Agent.objects.filter(account=request.user, status=STATUS_ACTIVE)
            }
        mine = [agent.pk for agent in agents.values()]
        views = views.filter(license_id__in=list(agents)).filter(Q(agent__isnull=True) | Q(agent__in=mine))
        request._console_views = list(views)
    return request._console_views


def my_agent_ids(request) -> list:
    agents = admin_agents(request)
    if agents is None:  # a superuser: its own agents, if it is one
        return list(
            Agent.objects.filter(account=request.user, status=STATUS_ACTIVE).values_list("pk", flat=True)
        )
    return [agent.pk for agent in agents.values()]


class TicketListFilter(admin.SimpleListFilter):
    """`?view=mine` (the default for an agent), `?view=all`, or `?view=<view ID>`."""

    title = "tickets"
    parameter_name = "view"

    def __init__(self, request, params, model, model_admin):
        self.request = request
        super().__init__(request, params, model, model_admin)

    def default(self) -> str:
        # a search looks through every ticket, unless a view is chosen with it
        if self.request.GET.get("q") or not my_agent_ids(self.request):
            return EVERY
        return MINE

    def value(self):
        return super().value() or self.default()

    def lookups(self, request, model_admin):
        views = visible_views(request)
        by_license: dict[int, list[View]] = {}
        for view in views:
            by_license.setdefault(view.license_id, []).append(view)
        counts = {}
        for license_views in by_license.values():
            for row in view_counts(license_views[0].license, license_views):
                counts[row["ID"]] = row["count"]
        several = len(admin_license_ids(request) or by_license) > 1
        mine = model_admin.get_queryset(request).filter(
            assignment_agent__in=my_agent_ids(request), status=MINE_STATUS
        )
        choices = [(MINE, f"My open tickets ({mine.count()})"), (EVERY, "All tickets")]
        for view in views:
            prefix = f"{license_label(view.license)}: " if several else ""
            private = " (private)" if view.agent_id else ""
            choices.append((str(view.pk), f"{prefix}{view.name}{private} ({counts[view.pk]})"))
        return choices

    def choices(self, changelist):
        # no Django "All" entry: "All tickets" is one of the lookups, and an agent's default is theirs
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == str(lookup),
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        value = self.value()
        if value == EVERY:
            return queryset
        if value == MINE:
            return queryset.filter(assignment_agent__in=my_agent_ids(request), status=MINE_STATUS)
        view = next((v for v in visible_views(request) if str(v.pk) == value), None)
        if view is None:
            return queryset.none()
        filterset = selectors.ticket_filterset(view.license, filters_query(view.filters), check_ids=False)[0]
        # the view's filters applied to the list's own query (no `pk IN (search)` subquery: at 300,000 tickets
        # that doubled the page's time, bench/console_pages.py)
        return filterset.filter_queryset(queryset.filter(license_id=view.license_id))
