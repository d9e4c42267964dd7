"""Input a real client sends, read as it means it: unknown query parameters are a 400 naming them (with a hint at
the right form), the common bracket forms are synonyms, and `null` for an optional body field means "not given"
(or "clear it" where the field allows null)."""

import pytest

from tests.factories import AgentFactory, TeamFactory, TicketFactory
from tickets.models import Ticket


def _error(response, status: int = 400) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert list(body) == ["error", "code", "details"], body
    return body


def _subjects(response) -> list[str]:
    assert response.status_code == 200, response.content
    return sorted(item["subject"] for item in response.json())


@pytest.fixture
def world(owner):
    team = TeamFactory(license=owner.license)
    other_agent = AgentFactory(license=owner.license)
    TicketFactory(
        license=owner.license,
        subject="eu",
        custom_fields={"region": "EU"},
        assignment_team=team,
        assignment_agent=owner.agent,
    )
    TicketFactory(
        license=owner.license, subject="us", custom_fields={"region": "US"}, assignment_agent=other_agent
    )
    return {"team": team, "agent": owner.agent, "other": other_agent}


# --- unknown query parameters ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "query", "param", "hint"),
    [
        ("/v1/tickets", "foo=1", "foo", None),
        ("/v1/tickets", "teamIDs=00000000-0000-0000-0000-000000000000", "teamIDs", "'teamIDs[]'"),
        ("/v1/tickets", "teamIDs[0]=00000000-0000-0000-0000-000000000000", "teamIDs[0]", "'teamIDs[]'"),
        ("/v1/tickets", "language=en", "language", "'language[]'"),
        ("/v1/tickets", "customFields=EU", "customFields", "customFields.<apiKey>"),
        ("/v1/tickets", "assignment[team]=x", "assignment[team]", None),
        ("/v1/tickets", "createdDate[from]=-1D", "createdDate[from]", None),
        ("/v1/tickets", "Status=open", "Status", "'status'"),
        ("/v1/tickets", "page_size=5", "page_size", None),
        ("/v1/auditLog", "timeRange[from]=-1D", "timeRange[from]", "'timeRange.from'"),
        ("/v1/auditLog", "author=x", "author", None),
        ("/v1/subscriptions", "planCodes=hd-team1m", "planCodes", "'planCodes[]'"),
        ("/v1/subscriptions", "status=active", "status", None),
    ],
)
def test_an_unknown_query_parameter_is_a_400_naming_it(owner, world, path, query, param, hint):
    body = _error(owner.client.get(f"{path}?{query}"))
    assert list(body["details"]) == [param]
    assert "Unknown parameter." in body["details"][param][0]
    if hint:
        assert hint in body["details"][param][0], body


def test_several_unknown_parameters_are_all_named(owner, world):
    body = _error(owner.client.get("/v1/tickets?foo=1&bar=2&status=open"))
    assert sorted(body["details"]) == ["bar", "foo"]


@pytest.mark.parametrize(
    "query",
    [
        "status=open&pageSize=5&sortBy=createdAt&order=asc",
        "page=1",
        "customFields.region=EU&customFieldsExist[]=region",
    ],
)
def test_filter_and_pagination_parameters_stay_accepted(owner, world, query):
    assert owner.client.get(f"/v1/tickets?{query}").status_code == 200


def test_the_bracket_form_of_custom_fields_filters_like_the_dotted_form(owner, world):
    dotted = _subjects(owner.client.get("/v1/tickets?customFields.region=EU"))
    bracket = _subjects(owner.client.get("/v1/tickets?customFields[region]=EU"))
    assert dotted == bracket == ["eu"]
    # both at once: every value must match (the same as two dotted ones)
    assert _subjects(owner.client.get("/v1/tickets?customFields[region]=EU&customFields.region=US")) == []


def test_a_bad_api_key_in_the_bracket_form_is_a_400(owner, world):
    _error(owner.client.get("/v1/tickets?customFields[bad key!]=EU"))


@pytest.mark.parametrize("form", ["assignment[{}ID]", "assignment.{}ID"])
def test_the_bracket_form_of_assignment_filters_like_the_dotted_form(owner, world, form):
    agent_param, team_param = form.format("agent"), form.format("team")
    assert _subjects(owner.client.get("/v1/tickets", {agent_param: str(world["agent"].pk)})) == ["eu"]
    assert _subjects(owner.client.get("/v1/tickets", {agent_param: str(world["other"].pk)})) == ["us"]
    assert _subjects(owner.client.get("/v1/tickets", {team_param: str(world["team"].pk)})) == ["eu"]
    assert _subjects(owner.client.get("/v1/tickets", {team_param: "none"})) == ["us"]


def test_the_openapi_document_describes_custom_fields_as_one_parameter_per_field(client, db):
    schema = client.get("/v1/openapi.json", HTTP_USER_AGENT="t").json()
    [param] = [p for p in schema["paths"]["/v1/tickets"]["get"]["parameters"] if p["name"] == "customFields"]
    assert param["style"] == "deepObject" and param["explode"] is True
    assert param["schema"]["type"] == "object"
    assert "customFields.<apiKey>" in param["description"]


# --- null for optional body fields ----------------------------------------------------------------------


def test_null_for_optional_fields_of_a_new_ticket_means_not_given(owner):
    # what a generated client library sends for the options it leaves unset
    body = {
        "subject": "Hello",
        "requester": {"email": "jane@example.com", "name": None},
        "message": {"text": "Where is my parcel?", "isPrivate": None},
        "status": None,
        "priority": None,
        "teamIDs": None,
        "tagIDs": None,
        "followers": None,
        "assignment": None,
        "customFields": None,
        "transactionID": None,
        "peopleInTheLoop": None,
    }
    response = owner.client.post("/v1/tickets", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["status"] == "open" and created["priority"] == 0
    assert created["teamIDs"] == [str(owner.license.default_team_id)]
    assert created["customFields"] == {}


@pytest.mark.parametrize("field", ["subject", "requester", "message"])
def test_null_for_a_required_field_stays_a_400(owner, field):
    body = {"subject": "Hello", "requester": {"email": "jane@example.com"}, "message": {"text": "Hi"}}
    body[field] = None
    assert field in _error(owner.client.post("/v1/tickets", body, format="json"))["details"]


def test_null_in_an_update_leaves_the_field_as_it_is(owner):
    ticket = TicketFactory(license=owner.license, status="pending", priority=10, custom_fields={"a": "b"})
    response = owner.client.patch(
        f"/v1/tickets/{ticket.pk}",
        {"status": None, "priority": None, "customFields": None, "teamIDs": None, "subject": "New"},
        format="json",
    )
    assert response.status_code == 200, response.content
    ticket = Ticket.objects.get(pk=ticket.pk)
    assert (ticket.status, ticket.priority, ticket.custom_fields, ticket.subject) == (
        "pending",
        10,
        {"a": "b"},
        "New",
    )


def test_null_clears_a_field_that_allows_it(owner):
    agent = AgentFactory(license=owner.license, job_title="Support")
    response = owner.client.patch(f"/v1/agents/{agent.pk}", {"jobTitle": None, "name": None}, format="json")
    assert response.status_code == 200, response.content
    agent.refresh_from_db()
    assert not agent.job_title
    assert agent.name  # name does not allow null: not given, kept


def test_an_unknown_field_is_still_a_400_even_when_null(owner):
    ticket = TicketFactory(license=owner.license)
    body = _error(owner.client.patch(f"/v1/tickets/{ticket.pk}", {"statuss": None}, format="json"))
    assert list(body["details"]) == ["statuss"]


@pytest.mark.parametrize("path", ["/v1/agents", "/v1/teams", "/v1/tags", "/v1/templates", "/v1/licenses"])
def test_a_list_without_filters_refuses_any_parameter(owner, path):
    assert owner.client.get(path).status_code == 200
    body = _error(owner.client.get(f"{path}?status=active"))
    assert list(body["details"]) == ["status"]
