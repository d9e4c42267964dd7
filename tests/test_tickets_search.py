"""`GET /v1/tickets`: every filter alone and in combination, against hand-computed expectations; invalid → 400."""

import datetime

import pytest
import time_machine

from accounts.models import ROLE_NORMAL
from tests.factories import AgentFactory, TagFactory, TeamFactory, TicketFactory
from tickets.filters import Linked
from tickets.models import Ticket

UTC = datetime.UTC
NOW = datetime.datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


def at(month, day, hour=0, minute=0):
    return datetime.datetime(2026, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def world(frozen, owner):
    """Seven tickets of the owner's license; each test states which ones a query must return."""
    license = owner.license
    t1, t2 = TeamFactory(license=license, name="Sales"), TeamFactory(license=license, name="Support")
    red, blue = TagFactory(license=license, name="red"), TagFactory(license=license, name="blue")
    xavier = AgentFactory(license=license, roles=[ROLE_NORMAL], name="Xavier")
    yvonne = AgentFactory(license=license, roles=[ROLE_NORMAL], name="Yvonne")
    english = "Hello, my order did not arrive yet. Could you please check where it is?"
    german = "Guten Tag, meine Bestellung ist noch nicht angekommen. Bitte prüfen Sie das."
    alpha = TicketFactory(
        license=license, subject="alpha", text=english, teams=[t1], tags=[red, blue], followers=[xavier],
        assignment={"team": t1, "agent": xavier}, custom_fields={"orderNo": "1", "plan": "pro"},
        rating_score="good", created_at=at(3, 15, 10), updated_at=at(3, 15, 11), last_message_at=at(3, 15, 11),
        status_changed_at=at(3, 15, 10), last_agent_message_at=at(3, 15, 11), last_client_message_at=at(3, 15, 10),
    )  # fmt: skip
    bravo = TicketFactory(
        license=license, subject="bravo", text=english, tags=[red], followers=[yvonne], priority=10,
        assignment={"agent": yvonne}, custom_fields={"orderNo": "2"}, rating_score="bad",
        created_at=at(3, 14, 10), updated_at=at(3, 14, 10), last_message_at=at(3, 14, 10),
        status_changed_at=at(3, 1), last_agent_message_at=None, last_client_message_at=at(3, 14, 10),
    )  # fmt: skip
    charlie = TicketFactory(
        license=license, subject="charlie", text=german, teams=[t2], priority=20, assignment={"team": t2},
        custom_fields={"plan": "basic"}, created_at=at(2, 20), updated_at=at(3, 10), last_message_at=at(3, 10),
        status_changed_at=at(2, 20), last_agent_message_at=at(3, 10), last_client_message_at=at(2, 20),
    )  # fmt: skip
    delta = TicketFactory(
        license=license, subject="delta", text=english, status="pending", priority=-10, created_at=at(1, 10)
    )
    echo = TicketFactory(license=license, subject="echo", text=english, silo="archive", created_at=at(3, 1))
    foxtrot = TicketFactory(
        license=license, subject="foxtrot", text=english, silo="spam", created_at=at(3, 2)
    )
    golf = TicketFactory(
        license=license, subject="golf", text="12345", language="none", created_at=at(3, 15, 11, 59)
    )
    TicketFactory(
        license=license, subject="hotel", text=english, parent=alpha, status="closed", created_at=at(3, 3)
    )
    bravo.parent = alpha
    type(bravo).objects.filter(pk=bravo.pk).update(parent=alpha)
    return {
        "t1": t1, "t2": t2, "red": red, "blue": blue, "xavier": xavier, "yvonne": yvonne, "alpha": alpha,
        "bravo": bravo, "charlie": charlie, "delta": delta, "echo": echo, "foxtrot": foxtrot, "golf": golf,
    }  # fmt: skip


def subjects(persona, params=None, **kwargs):
    response = persona.client.get("/v1/tickets", {"pageSize": 100, **(params or {}), **kwargs})
    assert response.status_code == 200, response.content
    assert int(response["X-Total-Results"]) == len(response.json())
    return [ticket["subject"] for ticket in response.json()]


def _resolve(world, params):
    """Replace `@name` values with the world's object IDs."""
    out = {}
    for key, value in params.items():
        if isinstance(value, list):
            out[key] = [
                str(world[v[1:]].pk) if isinstance(v, str) and v.startswith("@") else v for v in value
            ]
        elif isinstance(value, str) and value.startswith("@"):
            out[key] = str(world[value[1:]].pk)
        else:
            out[key] = value
    return out


# Newest first (createdAt desc) is the default order, so expectations are listed in that order.
CASES = [
    ({}, ["golf", "alpha", "bravo", "charlie"]),
    ({"status": "pending"}, ["delta"]),
    ({"status": "closed"}, ["hotel"]),
    ({"silo": "archive"}, ["echo"]),
    ({"silo": "spam"}, ["foxtrot"]),
    ({"spam": "true"}, ["golf", "alpha", "bravo", "foxtrot", "charlie"]),
    ({"spam": "false"}, ["golf", "alpha", "bravo", "charlie"]),
    ({"subject": "RAV"}, ["bravo"]),
    ({"customFields.orderNo": "1"}, ["alpha"]),
    ({"customFields.plan": "pro", "customFields.orderNo": "1"}, ["alpha"]),
    ({"customFields.plan": "pro", "customFields.orderNo": "2"}, []),
    ({"customFieldsExist[]": ["orderNo"]}, ["alpha", "bravo"]),
    ({"customFieldsExist[]": ["orderNo", "plan"]}, ["alpha"]),
    ({"teamIDs[]": ["@t1"]}, ["alpha"]),
    ({"teamIDs[]": ["@t1", "@t2"]}, ["alpha", "charlie"]),
    ({"hasAssignee": "Y"}, ["alpha", "bravo"]),
    ({"hasAssignee": "1"}, ["alpha", "bravo"]),
    ({"hasAssignee": "N"}, ["golf", "charlie"]),
    ({"hasAssignee": "0"}, ["golf", "charlie"]),
    ({"hasParent": "Y"}, ["bravo"]),
    ({"hasParent": "N"}, ["golf", "alpha", "charlie"]),
    ({"hasTags": "1"}, ["alpha", "bravo"]),
    ({"hasTags": "0"}, ["golf", "charlie"]),
    ({"shortID": "3"}, ["charlie"]),
    ({"shortID": "999"}, []),
    ({"parentTicketID": "@alpha"}, ["bravo"]),
    ({"parentTicketID": "@alpha", "status": "closed"}, ["hotel"]),
    ({"tagIDs[]": ["@red"]}, ["alpha", "bravo"]),
    ({"tagIDs[]": ["@red", "@blue"]}, ["alpha"]),
    ({"follower": "@yvonne"}, ["bravo"]),
    ({"rating": "good"}, ["alpha"]),
    ({"rating": "bad"}, ["bravo"]),
    ({"rating": "rated"}, ["alpha", "bravo"]),
    ({"rating": "none"}, ["golf", "charlie"]),
    ({"priority": "0"}, ["golf", "alpha"]),
    ({"priority": "10", "priorityOp": "gte"}, ["bravo", "charlie"]),
    ({"priority": "10", "priorityOp": "gt"}, ["charlie"]),
    ({"priority": "10", "priorityOp": "lt"}, ["golf", "alpha"]),
    ({"priority": "0", "priorityOp": "lte"}, ["golf", "alpha"]),
    ({"priorityOp": "gt"}, ["golf", "alpha", "bravo", "charlie"]),
    ({"assignment.teamID": "@t1"}, ["alpha"]),
    ({"assignment.teamID": "none"}, ["golf", "bravo"]),
    ({"assignment.agentID": "@yvonne"}, ["bravo"]),
    ({"assignment.agentID": "none"}, ["golf", "charlie"]),
    ({"language[]": ["de"]}, ["charlie"]),
    ({"language[]": ["none"]}, ["golf"]),
    ({"language[]": ["de", "none"]}, ["golf", "charlie"]),
    ({"createdDateFrom": "-1D"}, ["golf", "alpha", "bravo"]),
    ({"createdDateFrom": "-1D", "createdDateTo": "-0D"}, ["bravo"]),
    ({"createdDateFrom": "-0D", "timezone": "Pacific/Kiritimati"}, ["golf", "alpha"]),
    ({"createdDateFrom": "-2h"}, ["golf", "alpha"]),
    ({"createdDateFrom": "-0M"}, ["golf", "alpha", "bravo"]),
    ({"createdDateFrom": "2026-02-01", "createdDateTo": "2026-03-01"}, ["charlie"]),
    ({"updatedDateFrom": "-6d", "updatedDateTo": "-1d"}, ["bravo", "charlie"]),
    ({"lastMessageFrom": "2026-03-15T11:00:00Z"}, ["golf", "alpha"]),
    ({"statusChangedDateTo": "2026-03-02"}, ["bravo", "charlie"]),
    ({"lastAgentMessageFrom": "-10d"}, ["alpha", "charlie"]),
    ({"lastClientMessageFrom": "-2d", "lastClientMessageTo": "-1h"}, ["alpha", "bravo"]),
    # combinations
    ({"tagIDs[]": ["@red"], "priority": "10"}, ["bravo"]),
    ({"hasAssignee": "N", "language[]": ["de"], "teamIDs[]": ["@t2"]}, ["charlie"]),
    ({"status": "closed", "hasParent": "Y", "createdDateFrom": "-0M"}, ["hotel"]),
    ({"rating": "rated", "assignment.agentID": "@xavier", "customFields.plan": "pro"}, ["alpha"]),
    ({"spam": "true", "createdDateFrom": "2026-03-02", "createdDateTo": "2026-03-03"}, ["foxtrot"]),
    ({"query": "bravo"}, ["bravo"]),
]


@pytest.mark.parametrize(("params", "expected"), CASES, ids=[str(p) for p, _ in CASES])
def test_every_filter_alone_and_combined(owner, world, params, expected):
    assert subjects(owner, _resolve(world, params)) == expected


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("status", "done"),
        ("status", ""),
        ("silo", "bin"),
        ("spam", "maybe"),
        ("hasAssignee", "yes"),
        ("hasParent", "2"),
        ("hasTags", "true"),
        ("parentTicketID", "not-a-uuid"),
        ("follower", "x"),
        ("rating", "great"),
        ("priority", "5"),
        ("priority", "high"),
        ("priorityOp", "ne"),
        ("assignment.teamID", "nobody"),
        ("assignment.agentID", "123"),
        ("language[]", "xx"),
        ("teamIDs[]", "bad"),
        ("tagIDs[]", "bad"),
        ("customFieldsExist[]", "bad key!"),
        ("customFields.bad key!", "1"),
        ("timezone", "Mars/Olympus"),
        ("createdDateFrom", "yesterday"),
        ("updatedDateTo", "-2x"),
        ("lastMessageFrom", "2026-13-01"),
        ("statusChangedDateFrom", "2d"),
        ("lastAgentMessageTo", "-d"),
        ("lastClientMessageFrom", "+"),
        ("pageSize", "101"),
        ("pageSize", "0"),
        ("page", "0"),
        ("order", "up"),
        ("sortBy", "subject"),
        ("next.value", "not-a-date"),
        # parameters in a form the search does not read (they used to be ignored: every ticket matched)
        ("customFields", "EU"),
        ("teamIDs", "6f1c2a9e-0000-4000-8000-000000000000"),
        ("assignment[agent]", "none"),
        ("createdDate[from]", "-1D"),
    ],
)
def test_an_invalid_value_is_a_400_naming_the_parameter(owner, param, value):
    # when
    response = owner.client.get("/v1/tickets", {param: value})
    # then
    assert response.status_code == 400, (param, value, response.content)
    body = response.json()
    assert body["code"] == "invalid"
    assert param in body["details"] or param.split(".")[0] in str(body["details"]), body


def test_both_cursors_at_once_is_a_400(owner):
    ticket = TicketFactory(license=owner.license)
    value = "2026-01-01T00:00:00.000Z"
    response = owner.client.get(
        "/v1/tickets",
        {"next.value": value, "next.ID": str(ticket.pk), "prev.value": value, "prev.ID": str(ticket.pk)},
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "param", ["teamIDs[]", "tagIDs[]", "follower", "assignment.teamID", "assignment.agentID"]
)
def test_ids_of_another_license_are_a_400(owner, other_license, param):
    # given
    foreign = {
        "teamIDs[]": other_license.default_team_id,
        "assignment.teamID": other_license.default_team_id,
        "tagIDs[]": TagFactory(license=other_license).pk,
        "follower": other_license.agents.get().pk,
        "assignment.agentID": other_license.agents.get().pk,
    }[param]
    # when
    response = owner.client.get("/v1/tickets", {param: str(foreign)})
    # then
    assert response.status_code == 400
    assert param in response.json()["details"]


def test_a_foreign_team_next_to_a_matching_team_is_a_400(owner, other_license):
    # given a ticket of the caller's default team: the search matches through that team alone
    TicketFactory(license=owner.license)
    teams = [str(owner.license.default_team_id), str(other_license.default_team_id)]
    # when
    response = owner.client.get("/v1/tickets", {"teamIDs[]": teams})
    # then
    assert response.status_code == 400
    assert f"'{other_license.default_team_id}' does not exist" in str(response.json()["details"]["teamIDs[]"])


def test_a_foreign_tag_next_to_a_matching_tag_is_a_400(owner, other_license):
    tag = TagFactory(license=owner.license)
    TicketFactory(license=owner.license, tags=[tag])
    foreign = TagFactory(license=other_license)
    response = owner.client.get("/v1/tickets", {"tagIDs[]": [str(tag.pk), str(foreign.pk)]})
    assert response.status_code == 400
    assert "tagIDs[]" in response.json()["details"]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (lambda w: Linked("tags", [w["red"].pk]), {"alpha", "bravo"}),
        (lambda w: Linked("teams", [w["t1"].pk, w["t2"].pk]), {"alpha", "charlie"}),
        (lambda w: ~Linked("tags"), {"charlie", "delta", "echo", "foxtrot", "golf", "hotel"}),
    ],
)
def test_the_linked_condition_holds_inside_a_subquery_and_a_join(world, condition, expected):
    # The search's condition names the tickets table by its alias, which changes when the query is nested
    filtered = Ticket.objects.filter(condition(world))
    nested = Ticket.objects.filter(pk__in=filtered.values("pk"))
    children = Ticket.objects.filter(parent__in=filtered).values_list("subject", flat=True)
    assert set(nested.values_list("subject", flat=True)) == expected
    assert set(children) == ({"bravo", "hotel"} if "alpha" in expected else set())


def test_an_outsider_finds_nothing(world, outsider):
    # given the outsider has a ticket of its own
    TicketFactory(license=outsider.license, subject="theirs")
    # when / then
    assert subjects(outsider) == ["theirs"]
    assert subjects(outsider, {"query": "alpha"}) == []
    assert subjects(outsider, {"spam": "true", "silo": "archive"}) == []


def test_every_persona_of_the_license_can_search(world, agent, viewer):
    assert subjects(agent) == subjects(viewer) == ["golf", "alpha", "bravo", "charlie"]
