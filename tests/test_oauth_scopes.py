"""An OAuth token's rights are its scopes intersected with the approving agent's role, on every API route:
a read-only token never writes, an agent whose role is viewer never writes whatever the scopes, an owner's
`:rw` token writes (and no token reaches the apps and grants routes)."""

from __future__ import annotations

import pytest

from accounts.oauth.scopes import RESOURCES
from tests.oauth_helpers import bearer_client, make_app, make_grant
from tests.route_objects import ROUTE_OBJECTS
from tests.test_tenancy import _LOOKUP, _path, _viewset_routes

WRITE_METHODS = {"post", "put", "patch", "delete"}
ALL_RW = tuple(f"{resource}--all:rw" for resource in RESOURCES)


def _routes(methods):
    for route, pattern, _cls, actions in _viewset_routes():
        for method in actions:
            if method not in methods:
                continue
            basename = None
            if _LOOKUP.search(route):
                name = pattern.name
                basename = name.rsplit("-", 1)[0] if name.endswith("-detail") else name.split("-")[0]
                if name.startswith("app-grant"):
                    basename = "app-grant"
            yield pytest.param(route, basename, method, id=f"{method.upper()} {route}")


WRITES = list(_routes(WRITE_METHODS))
READS = list(_routes({"get"}))


def _call(client, route, basename, method, license, pk=None):
    pk = pk if pk is not None else ROUTE_OBJECTS[basename](license) if basename else None
    path = _path(route, pk) if pk is not None else "/" + route.replace("^", "").replace("$", "")
    return getattr(client, method)(path, {}, format="json")


@pytest.mark.parametrize(("route", "basename", "method"), WRITES)
def test_a_write_needs_a_rw_scope_of_its_resource_and_a_role_that_writes(
    route, basename, method, license, owner, viewer
):
    # One test per route for the three grants (each a test of its own before: the license and its personas
    # made three times a route, ~5% of the suite's CPU). The route's object is made once: the first two calls
    # are refused before they change anything.
    pk = ROUTE_OBJECTS[basename](license) if basename else None
    # given a read-only tickets token of the owner: it never writes
    token = make_grant(license, agent=owner.agent, scopes=("tickets--all:ro",))
    response = _call(bearer_client(token.plaintext), route, basename, method, license, pk)
    assert response.status_code == 403, (route, method, response.content)
    assert response.json()["code"] == "insufficient_scope"

    # given every :rw scope approved by an owner who has been made a viewer since: the role narrows every scope
    app = make_app(license, scopes=ALL_RW)
    token = make_grant(license, agent=viewer.agent, scopes=ALL_RW, app=app)
    response = _call(bearer_client(token.plaintext), route, basename, method, license, pk)
    assert response.status_code == 403, (route, method, response.content)

    # given every :rw scope approved by an owner: the write goes through
    token = make_grant(license, agent=owner.agent, scopes=ALL_RW, app=app)
    response = _call(bearer_client(token.plaintext), route, basename, method, license, pk)
    if route.startswith("v1/^apps") or (route, method) == ("v1/^licenses$", "post"):
        # apps and grants are no resource of any scope (an app never manages them), and a grant is bound to
        # its app's license (an app never creates another)
        assert response.status_code == 403, (route, method, response.content)
    else:
        # through to the view: a 2xx, or the view's own 400/404/405/409 for the empty body
        assert response.status_code not in (401, 403), (route, method, response.content)
        assert response.status_code < 500, (route, method, response.content)


@pytest.mark.parametrize(("route", "basename", "method"), READS)
def test_a_tickets_token_reads_only_tickets(route, basename, method, license, owner):
    token = make_grant(license, agent=owner.agent, scopes=("tickets--all:ro",))
    response = _call(bearer_client(token.plaintext), route, basename, method, license)
    resource = route.split("/")[1].lstrip("^").rstrip("$")
    if resource in ("tickets", "transactions"):
        assert response.status_code not in (401, 403), (route, response.content)
    else:
        assert response.status_code == 403, (route, response.content)
