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


@pytest.mark.parametrize("path", ["/v1/tickets", "/v1/auditLog"])
def test_a_cursors_id_is_documented_as_what_the_server_accepts(schema, path):
    # the server refuses a cursor ID that is not a UUID (400): the document says so, so a client can know it
    parameters = {p["name"]: p["schema"] for p in schema["paths"][path]["get"]["parameters"]}
    for name in ("next.ID", "prev.ID"):
        assert (parameters[name]["type"], parameters[name]["format"]) == ("string", "uuid")


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


def test_every_operation_has_a_readable_summary_a_description_and_a_tag(schema):
    tags = {tag["name"] for tag in schema["tags"]}
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            assert operation["summary"][0].isupper() and "_" not in operation["summary"], (path, method)
            assert operation["description"], (path, method)
            assert len(operation["tags"]) == 1 and operation["tags"][0] in tags, (path, method)
    assert schema["paths"]["/v1/agents"]["get"]["summary"] == "List agents"
    assert schema["paths"]["/v1/agents"]["post"]["summary"] == "Create agent"
    assert schema["paths"]["/v1/agents/{agentID}"]["get"]["summary"] == "Get agent"
    assert schema["paths"]["/v1/agents/{agentID}"]["patch"]["summary"] == "Update agent"
    assert schema["paths"]["/v1/agents/{agentID}"]["delete"]["summary"] == "Delete agent"
    assert schema["paths"]["/v1/auditLog"]["get"]["tags"] == ["Audit log"]


def test_paging_and_retry_headers_are_documented(schema):
    search = schema["paths"]["/v1/tickets"]["get"]["responses"]
    assert {"X-Total-Results", "X-Total-Pages", "Link"} <= set(search["200"]["headers"])
    for item in schema["paths"].values():
        for operation in item.values():
            assert "Retry-After" in operation["responses"]["429"]["headers"]
            assert "Retry-After" in operation["responses"]["503"]["headers"]


def test_request_bodies_refuse_unknown_fields_as_the_server_does(schema):
    assert schema["components"]["schemas"]["AgentCreateRequest"]["additionalProperties"] is False
    assert schema["components"]["schemas"]["PatchedAgentWriteRequest"]["additionalProperties"] is False


def test_generating_the_document_prints_no_warnings(capsys):
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    GENERATOR_STATS.reset()
    SchemaGenerator().get_schema(request=None, public=True)
    assert not GENERATOR_STATS, dict(GENERATOR_STATS._warn_cache)
    assert "Warning" not in capsys.readouterr().err


def test_the_document_is_generated_once_per_process(client, db, monkeypatch):
    from drf_spectacular.generators import SchemaGenerator

    client.get("/v1/openapi.json", HTTP_USER_AGENT="t")
    calls = []
    monkeypatch.setattr(SchemaGenerator, "get_schema", lambda *a, **k: calls.append(1))
    assert client.get("/v1/openapi.json", HTTP_USER_AGENT="t").json()["paths"]
    assert calls == []


def test_the_docs_page_loads_nothing_from_another_host(client, db):
    html = client.get("/v1/docs", HTTP_USER_AGENT="t").content.decode()
    urls = re.findall(r"""(?:src|href)=["']([^"']+)""", html) + re.findall(r"url\(([^)]+)\)", html)
    assert urls
    assert [url for url in urls if re.match(r"\s*(https?:)?//", url)] == []
    assert "fonts.googleapis" not in html


def test_the_main_resources_have_request_and_response_examples(schema):
    create = schema["paths"]["/v1/agents"]["post"]["requestBody"]["content"]["application/json"]
    assert create["examples"]["InviteAnAgent"]["value"]["email"] == "jane@example.com"
    get = schema["paths"]["/v1/agents/{agentID}"]["get"]["responses"]["200"]["content"]["application/json"]
    assert get["examples"]["AnAgent"]["value"]["roles"] == ["normal"]
    for path in ("/v1/teams", "/v1/tickets", "/v1/webhooks"):
        assert schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["examples"], path
