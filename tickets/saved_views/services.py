"""View writes. A view's filters are checked by the search itself (tickets.selectors.ticket_filterset): what the
search would refuse, a view refuses at save, with the same message, under `filters`."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError

from accounts.models import Agent, License
from accounts.services import stamp_create, stamp_update
from helpdesk.api.pagination import PAGINATION_PARAMS
from helpdesk.errors import Conflict, Forbidden, Invalid, field_error
from helpdesk.transactions import unit_of_work
from tickets import selectors
from tickets.saved_views.models import View
from tickets.saved_views.selectors import filters_query

MAX_VIEWS = 100  # private views per agent, and shared views per license
MAX_FILTERS = 50
MAX_VALUES = 100
NOT_SAVED = frozenset({"timezone", *PAGINATION_PARAMS})  # the request's, not the view's


def _scalar(value) -> bool:
    return isinstance(value, str | int | float | bool) and value is not None


def check_filters(license: License, filters: dict) -> None:
    """A 400 under `filters` naming the first parameter the search would refuse (or that a view does not keep)."""
    if not isinstance(filters, dict):
        raise field_error("filters", "Expected a JSON object of search parameters.")
    if len(filters) > MAX_FILTERS:
        raise field_error("filters", f"At most {MAX_FILTERS} parameters.")
    errors = {}
    for name, value in filters.items():
        if name in NOT_SAVED:
            errors[name] = ["Not saved with a view: send it with GET /v1/views/{ID}/tickets."]
        elif isinstance(value, list):
            if len(value) > MAX_VALUES or not all(_scalar(item) for item in value):
                errors[name] = [f"Expected a value or an array of at most {MAX_VALUES} values."]
        elif not _scalar(value):
            errors[name] = ["Expected a string, a number, a boolean or an array of them."]
    if not errors:
        try:
            selectors.ticket_filterset(license, filters_query(filters))
        except ValidationError as exc:
            errors = {key: [str(message) for message in messages] for key, messages in exc.detail.items()}
    if errors:
        first = next(iter(errors))
        raise Invalid(f"Invalid value for 'filters.{first}': {errors[first][0]}", details={"filters": errors})


def _check_owner(license: License, author: Agent | None, agent_id) -> None:
    """Shared views (agent_id None) are the owners'; a private view is its own agent's. `author` None: an
    operator (the admin), who may save either for any agent of the license."""
    if agent_id is None:
        if author is not None and not author.is_owner:
            raise Forbidden(
                "Only owners save shared views (agentID null); send your own agentID for a private view."
            )
        return
    if not Agent.objects.for_license(license).filter(pk=agent_id).exists():
        raise field_error("agentID", f"'{agent_id}' does not exist in this license.")
    if author is not None and agent_id != author.pk:
        raise field_error(
            "agentID",
            "A private view belongs to the agent who saves it: send your own ID, or null for a shared view.",
        )


def _check_writable(view: View, author: Agent | None) -> None:
    if author is not None and view.agent_id is None and not author.is_owner:
        raise Forbidden("Only owners change shared views.")


def _check_limit(license: License, agent_id) -> None:
    License.objects.select_for_update().filter(pk=license.pk).first()  # one save at a time counts
    if View.objects.for_license(license).filter(agent_id=agent_id).count() >= MAX_VIEWS:
        whose = "an agent keeps" if agent_id else "a license shares"
        raise Conflict(
            f"The limit of {MAX_VIEWS} views {whose} is reached: delete one first.",
            code="limit_reached",
            details={"agentID": [f"At most {MAX_VIEWS} views."]},
        )


@unit_of_work
def view_create(
    *,
    license: License,
    author: Agent | None,
    name: str,
    filters: dict | None = None,
    ordering: int = 0,
    agent_id=None,
) -> View:
    filters = {} if filters is None else filters
    _check_owner(license, author, agent_id)
    check_filters(license, filters)
    _check_limit(license, agent_id)
    view = View(license=license, agent_id=agent_id, name=name, filters=filters, ordering=ordering)
    stamp_create(view)
    view.save()
    return view


@unit_of_work
def view_update(*, view: View, author: Agent | None, **fields) -> View:
    """PATCH: name, filters, ordering (whose view it is does not change)."""
    view = View.objects.select_for_update().get(pk=view.pk)
    _check_writable(view, author)
    if "filters" in fields:
        fields["filters"] = {} if fields["filters"] is None else fields["filters"]
        check_filters(view.license, fields["filters"])
    for key, value in fields.items():
        setattr(view, key, value)
    stamp_update(view)
    view.save()
    return view


@unit_of_work
def view_delete(*, view: View, author: Agent | None) -> None:
    _check_writable(view, author)
    view.delete()
