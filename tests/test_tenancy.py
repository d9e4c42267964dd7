"""Tenancy is enforced in one base class, and an outsider gets 404 on every route that names an object."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from helpdesk.api.tenancy import LicenseScopedViewSet
from tests.route_objects import ROUTE_OBJECTS

_LOOKUP = re.compile(r"\(\?P<\w+>[^)]*\)|<(?:\w+:)?\w+>")

# Views that are not license-owned data and say why.
NOT_LICENSE_SCOPED = {
    "LicenseViewSet": "the license is the tenant itself; get_object() allows only request.license",
    "LicenseForwardingViewSet": "an action on the license itself (LicenseViewSetBase, as LicenseViewSet)",
}
# Routes whose lookup names no object: every license has each of them (tests/test_reports.py checks that an
# outsider's report counts nothing of another license's).
NOT_OBJECT_ROUTES = {"report": "a report's name (GET /v1/reports/{name})"}


def _api_patterns(resolver=None, prefix=""):
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _api_patterns(pattern, route)
        elif isinstance(pattern, URLPattern) and route.startswith("v1/"):
            yield route, pattern


def _viewset_routes():
    for route, pattern in _api_patterns():
        cls = getattr(pattern.callback, "cls", None)
        actions = getattr(pattern.callback, "actions", None)
        if cls is not None and actions:
            yield route, pattern, cls, actions


def test_every_viewset_derives_from_the_tenancy_base_class():
    classes = {cls for _, _, cls, _ in _viewset_routes()}
    assert classes
    for cls in classes:
        if cls.__name__ in NOT_LICENSE_SCOPED:
            continue
        assert issubclass(cls, LicenseScopedViewSet), f"{cls.__name__} must derive from LicenseScopedViewSet"


def _detail_routes():
    for route, pattern, _cls, actions in _viewset_routes():
        if not _LOOKUP.search(route):
            continue
        basename = (
            pattern.name.rsplit("-", 1)[0] if pattern.name.endswith("-detail") else pattern.name.split("-")[0]
        )
        if basename in NOT_OBJECT_ROUTES:
            continue
        for method in actions:
            if method in ("head", "options"):
                continue
            yield pytest.param(route, basename, method, id=f"{method.upper()} {route}")


def _path(route: str, pk) -> str:
    path = _LOOKUP.sub(str(pk), route)
    return "/" + path.replace("^", "").replace("$", "").replace("\\", "")


@pytest.mark.parametrize(("route", "basename", "method"), list(_detail_routes()))
def test_an_outsider_gets_404_on_every_object_route(route, basename, method, license, outsider):
    # given an object of `license`
    assert basename in ROUTE_OBJECTS, f"add an entry for '{basename}' to tests/route_objects.py"
    pk = ROUTE_OBJECTS[basename](license)
    # when the owner of another license addresses it
    response = getattr(outsider.client, method)(_path(route, pk), {}, format="json")
    # then it does not exist for them
    assert response.status_code == 404, (route, method, response.content)
    assert response.json()["code"] == "not_found"
