"""The OpenAPI document describes every operation, with the spec's field names."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.spec import FIELDS


@pytest.fixture
def schema(client, db):
    response = client.get("/v1/openapi.json", HTTP_USER_AGENT="t")
    assert response.status_code == 200
    assert "json" in response["Content-Type"]
    return response.json()


def _routes(resolver=None, prefix=""):
    for pattern in (resolver or get_resolver()).url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern, route)
        elif isinstance(pattern, URLPattern) and getattr(pattern.callback, "actions", None):
            yield route, pattern.callback.actions


def _openapi_path(route: str) -> str:
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)
    return "/" + route.replace("^", "").replace("$", "").replace("\\", "")


def test_every_api_operation_is_documented(schema):
    documented = {(path, method) for path, item in schema["paths"].items() for method in item}
    for route, actions in _routes():
        for method in actions:
            if method in ("head", "options", "put"):
                continue
            assert (_openapi_path(route), method) in documented, (route, method)


@pytest.mark.parametrize("name", ["Agent", "Team", "License"])
def test_resource_schemas_use_the_spec_field_names(schema, name):
    properties = schema["components"]["schemas"][name]["properties"]
    assert set(FIELDS[name]) <= set(properties)


def test_every_operation_documents_the_error_shape_and_basic_auth(schema):
    assert schema["components"]["securitySchemes"]["basicToken"]["scheme"] == "basic"
    for item in schema["paths"].values():
        for operation in item.values():
            assert operation["responses"]["401"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"
            }


def test_the_docs_page_is_served_without_a_cdn(client, db):
    response = client.get("/v1/docs", HTTP_USER_AGENT="t")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/v1/openapi.json" in html
    assert "cdn." not in html and "unpkg" not in html


def test_the_ticket_search_documents_every_filter_and_pagination_parameter(schema):
    names = {p["name"] for p in schema["paths"]["/v1/tickets"]["get"]["parameters"]}
    expected = {"status", "query", "teamIDs[]", "tagIDs[]", "assignment.agentID", "language[]", "priorityOp"}
    expected |= {"createdDateFrom", "lastClientMessageTo", "timezone", "pageSize", "next.value", "prev.ID"}
    assert expected <= names, expected - names


def test_the_ticket_documents_its_events_and_the_download(schema):
    schemas = schema["components"]["schemas"]
    events = schemas["Ticket"]["properties"]["events"]
    assert events["type"] == "array" and events["items"] == {"$ref": "#/components/schemas/TicketEvent"}
    event = schemas["TicketEvent"]["properties"]
    assert {"ID", "date", "type", "author", "source", "message", "attachments", "deliveryStatus", "status",
            "assignment", "tags", "merge", "rating"} <= set(event)  # fmt: skip
    search = {p["name"]: p for p in schema["paths"]["/v1/tickets"]["get"]["parameters"]}
    assert search["eventsScope"]["schema"]["enum"] == ["all", "none"]
    download = schema["paths"]["/v1/attachments/{token}/{name}"]["get"]
    assert {p["name"] for p in download["parameters"]} >= {"token", "name", "sig"}
