"""Every route passes the same scope and role check (issue 36): the URL resolver's every pattern, called with a
Bearer token of each narrower scope, is refused (403 `insufficient_scope`) unless the scope covers it. Routes
outside the API (the OAuth endpoints, the sign-in and the e-mailed pages, the admin) take no Bearer token: with
one they answer exactly as without."""

from __future__ import annotations

import secrets

import pytest
from django.core.files.base import ContentFile
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.api.authentication import OAuthGrant
from accounts.models import Attachment, AttachmentTransaction
from accounts.oauth import scopes
from accounts.oauth.scopes import RESOURCES, resource_of
from tests.oauth_helpers import bearer_client, make_app, make_grant
from tests.route_objects import ROUTE_OBJECTS
from tests.test_tenancy import _LOOKUP, _path

SAFE = {"get", "head", "options"}
# Every resource read-only and read-write: each scope is narrower than the whole API. (The reach part is not
# enforced by paths: docs/api.md.)
NARROW_SCOPES = [f"{resource}--all:{mode}" for resource in RESOURCES for mode in ("ro", "rw")]
_ORDER = list(RESOURCES)


def _scopes_tried(path: str) -> list[str]:
    """The scopes a route is called with: its own resource's read-only and read-write scopes, and the
    neighbouring resources' (the next one's `:rw`, the one before's `:ro`), which must be refused. Which
    scope covers which path is decided by one function for every route (`accounts.oauth.scopes.allows`,
    checked over every scope and route below without HTTP); over HTTP what each route must show is that it
    asks it. Every scope was tried on every route before: 36 requests a route, 18% of the suite's CPU
    (issue 34's suite budget, 2026-12-05), for the same finding."""
    own = resource_of(path)
    at = _ORDER.index(own) if own in RESOURCES else 0
    tried = [f"{_ORDER[(at + 1) % len(_ORDER)]}--all:rw", f"{_ORDER[at - 1]}--all:ro"]
    if own in RESOURCES:
        tried += [f"{own}--all:ro", f"{own}--all:rw"]
    return tried


# API routes no token is needed for, and why.
PUBLIC = {
    "openapi": "the OpenAPI document is public",
    "docs": "the human docs page is public",
}


def _patterns(resolver=None, prefix=""):
    for pattern in (resolver or get_resolver()).url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern, route)
        elif isinstance(pattern, URLPattern):
            yield route, pattern


def _methods(pattern) -> list[str]:
    actions = getattr(pattern.callback, "actions", None)
    if actions:
        return [method for method in actions if method not in ("head", "options")]
    cls = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
    if cls is None:
        return ["get", "post"]
    return [m for m in ("get", "post", "patch", "delete") if hasattr(cls, m)]


def _api_routes():
    for route, pattern in _patterns():
        if not route.startswith("v1/"):
            continue
        for method in _methods(pattern):
            yield pytest.param(route, pattern.name, method, id=f"{method.upper()} {route}")


def _other_routes():
    for route, pattern in _patterns():
        if route.startswith("v1/") or (route.startswith("admin/") and route != "admin/"):
            continue  # the admin: its index stands for the rest (a session, never a token)
        for method in _methods(pattern):
            yield pytest.param(route, pattern.name, method, id=f"{method.upper()} {route}")


def _attachment_path(license) -> str:
    transaction = AttachmentTransaction.objects.create(license=license)
    attachment = Attachment(
        license=license,
        transaction=transaction,
        name="a.txt",
        content_type="text/plain",
        size=1,
        sha256="0" * 64,
        token=secrets.token_urlsafe(24),
    )
    attachment.file.save("a.txt", ContentFile(b"x"), save=False)
    attachment.save()
    return f"/v1/attachments/{attachment.token}/{attachment.name}"


def _basename(pattern) -> str:
    name = pattern.name
    if name.startswith("app-grant"):
        return "app-grant"
    return name.rsplit("-", 1)[0] if name.endswith("-detail") else name.split("-")[0]


def _api_path(route: str, name: str, license) -> str:
    if name == "attachment-download":
        return _attachment_path(license)
    if not _LOOKUP.search(route):
        return "/" + route.replace("^", "").replace("$", "").replace("\\", "")
    pattern = next(p for r, p in _patterns() if r == route)
    return _path(route, ROUTE_OBJECTS[_basename(pattern)](license))


def _covers(scope: str, path: str, method: str) -> bool:
    resource, mode = scope.split("--")[0], scope.rsplit(":", 1)[1]
    return resource_of(path) == resource and (method in SAFE or mode == "rw")


@pytest.fixture
def tmp_media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


@pytest.mark.parametrize(("route", "name", "method"), list(_api_routes()))
def test_a_narrow_token_reaches_only_the_routes_its_scope_covers(
    route, name, method, license, owner, tmp_media
):
    # given an app that may ask for every scope, and an owner who approved each narrow scope
    app = make_app(license, scopes=[f"{r}--all:{m}" for r in RESOURCES for m in ("ro", "rw")])
    path = _api_path(route, name, license)
    for scope in _scopes_tried(path):
        token = make_grant(license, agent=owner.agent, app=app, scopes=(scope,))
        # when the token calls the route
        response = getattr(bearer_client(token.plaintext), method)(path, {}, format="json")
        # then it is refused unless the scope covers the route (and public documents are public)
        if name in PUBLIC:
            assert response.status_code == 200, (scope, response.status_code)
        elif _covers(scope, path, method) and (route, method) != ("v1/^licenses$", "post"):
            assert response.status_code not in (401, 403), (scope, path, response.content)
        else:
            assert response.status_code == 403, (scope, path, response.status_code)
            assert response.json()["code"] == "insufficient_scope", (scope, path, response.content)


def test_every_narrow_scope_covers_exactly_the_routes_of_its_resource():
    # given every API route's path shape and method, and every narrow scope
    routes = [param.values for param in _api_routes()]
    assert len(routes) > 100
    for route, _name, method in routes:
        path = "/" + _LOOKUP.sub("1", route).replace("^", "").replace("$", "").replace("\\", "")
        for scope in NARROW_SCOPES:
            # when the grant's check is asked, then it answers as the scope's resource and mode say
            grant = OAuthGrant(access_token_id=1, scopes=(scope,), app_name="app")
            expected = _covers(scope, path, method)
            assert grant.allows(path, write=method not in SAFE) is expected, (scope, method, path)
            assert scopes.allows((scope,), path, write=method not in SAFE) is expected, (scope, path)


@pytest.mark.parametrize(("route", "name", "method"), list(_other_routes()))
def test_a_token_is_no_credential_outside_the_api(route, name, method, license, owner, client):
    # given a token with every scope
    app = make_app(license, scopes=NARROW_SCOPES)
    token = make_grant(license, agent=owner.agent, app=app, scopes=tuple(NARROW_SCOPES))
    path = "/" + _LOOKUP.sub("1", route)
    # when a page or an OAuth endpoint is called with it, and without it
    without = getattr(client, method)(path, HTTP_USER_AGENT="helpdesk-tests/1.0")
    bearer = getattr(client, method)(
        path, HTTP_USER_AGENT="helpdesk-tests/1.0", HTTP_AUTHORIZATION=f"Bearer {token.plaintext}"
    )
    # then the token changed nothing: a page never acts on an API token
    assert bearer.status_code == without.status_code, (path, bearer.status_code, without.status_code)
    assert bearer.get("Location") == without.get("Location")
