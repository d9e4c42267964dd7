"""GET /v1/auditLog: owners only, one license, filters, newest first, cursor pagination."""

import datetime
import re

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import services
from audit.models import AuditEntry
from helpdesk.context import SYSTEM_ACTOR_ID, Actor, acting_as

ENTRY_KEYS = ["ID", "createdAt", "action", "target", "author", "entityName"]
AUTHOR_KEYS = ["ID", "accountID", "type", "email", "ip", "userAgent"]
UTC = datetime.UTC


# Later than the personas' own entries (written at the real time), so the history is the newest part.
DAY = datetime.datetime.now(UTC).date() + datetime.timedelta(days=30)


def at(days, hour):
    """`hour` o'clock UTC, `days` after DAY."""
    return datetime.datetime.combine(DAY + datetime.timedelta(days=days), datetime.time(hour), tzinfo=UTC)


def iso(moment):
    return moment.isoformat().replace("+00:00", "Z")


@pytest.fixture
def history(owner, agent):
    """Entries of `license` at known times, by known authors (besides the license's creation entries)."""
    someone = Actor(type="agent", id=agent.account.pk, email=agent.account.email)
    with time_machine.travel(at(-5, 12), tick=False):
        team = services.team_create(license=owner.license, name="Old team")
    with time_machine.travel(at(-1, 9), tick=False), acting_as(someone):
        services.team_update(team=team, name="Renamed team")
    with time_machine.travel(at(0, 8), tick=False):
        services.team_delete(team=team)
    return {"team": team, "someone": someone}


def ids(response):
    return [item["ID"] for item in response.json()]


def test_the_owner_gets_the_licenses_entries_newest_first_in_the_spec_shape(owner, history):
    # when
    response = owner.client.get("/v1/auditLog")
    # then
    assert response.status_code == 200
    body = response.json()
    expected = AuditEntry.objects.filter(license=owner.license).order_by("-created_at", "-id")
    assert ids(response) == [str(e.id) for e in expected]
    assert response["X-Total-Results"] == str(expected.count())
    assert all(list(item) == ENTRY_KEYS and list(item["author"]) == AUTHOR_KEYS for item in body)
    newest = body[0]
    assert (
        newest["action"] == "delete"
        and newest["target"] == "teams"
        and newest["entityName"] == "Renamed team"
    )
    assert newest["author"] == {
        "ID": str(SYSTEM_ACTOR_ID), "accountID": None, "type": "helpdeskSystem", "email": "", "ip": "", "userAgent": ""
    }  # fmt: skip
    timestamps = [item["createdAt"] for item in body]
    assert timestamps == sorted(timestamps, reverse=True)


def test_api_writes_show_their_author(owner):
    # given
    owner.client.patch(f"/v1/agents/{owner.agent.pk}", {"name": "Boss"}, format="json")
    # when
    newest = owner.client.get("/v1/auditLog", {"pageSize": 1}).json()[0]
    # then
    assert newest["author"] == {
        "ID": str(owner.agent.pk),  # what /v1/agents lists
        "accountID": str(owner.account.pk),
        "type": "api",
        "email": owner.account.email,
        "ip": "127.0.0.1",
        "userAgent": "helpdesk-tests/1.0",
    }
    assert newest["entityName"] == "Boss"


@pytest.mark.parametrize("persona", ["normal", "viewer"])
def test_non_owners_are_refused(personas, persona, history):
    response = personas[persona].client.get("/v1/auditLog")
    assert response.status_code == 403
    assert "ID" not in response.content.decode()


def test_an_outsider_sees_nothing_of_another_license(outsider, owner, history):
    # when
    response = outsider.client.get("/v1/auditLog", {"pageSize": 100})
    # then only their own license's entries
    assert response.status_code == 200
    own = AuditEntry.objects.filter(license=outsider.license)
    assert sorted(ids(response)) == sorted(str(e.id) for e in own)
    assert not set(ids(response)) & {str(e.id) for e in AuditEntry.objects.filter(license=owner.license)}
    # nor through a filter naming the other license's author
    response = outsider.client.get("/v1/auditLog", {"authorID": str(history["someone"].id)})
    assert response.json() == []


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"action": "update"}, ["update"]),
        ({"action": "delete", "target": "teams"}, ["delete"]),
        (
            {"target": "teams", "timeRange.from": str(DAY - datetime.timedelta(days=5))},
            ["delete", "update", "create"],
        ),
        ({"target": "tags"}, []),
        ({"target": "emailTemplates", "timeRange.from": "-1d"}, []),
        ({"authorType": "agent"}, ["update"]),
        ({"timeRange.from": iso(at(-1, 9)), "timeRange.to": iso(at(0, 8))}, ["update"]),
        ({"timeRange.from": iso(at(-5, 12)), "timeRange.to": iso(at(-1, 9))}, ["create"]),
        ({"timeRange.from": "-1D", "timeRange.to": "-0D", "timezone": "Europe/Warsaw"}, ["update"]),
        ({"timeRange.from": "-1d"}, ["delete"]),
    ],
)
@time_machine.travel(at(0, 10), tick=False)
def test_each_filter_narrows_the_log(owner, history, params, expected):
    # when
    response = owner.client.get("/v1/auditLog", params)
    # then
    assert response.status_code == 200, response.content
    assert [item["action"] for item in response.json()] == expected
    assert response["X-Total-Results"] == str(len(expected))


def test_it_filters_by_author_id(owner, agent, history):
    # the agent ID a client takes from /v1/agents, and the account ID, find the same entries
    for author_id in (agent.agent.pk, agent.account.pk):
        response = owner.client.get("/v1/auditLog", {"authorID": str(author_id)})
        assert [(item["action"], item["author"]["ID"], item["author"]["accountID"]) for item in response.json()] == [
            ("update", str(agent.agent.pk), str(agent.account.pk))
        ]  # fmt: skip
    listed = {item["ID"] for item in owner.client.get("/v1/agents").json()}
    assert str(agent.agent.pk) in listed


def test_the_system_has_one_id_that_filters_its_entries(owner, history):
    response = owner.client.get("/v1/auditLog", {"authorID": str(SYSTEM_ACTOR_ID), "target": "teams"})
    found = [(item["action"], item["entityName"]) for item in response.json()]
    assert ("delete", "Renamed team") in found and ("create", "Old team") in found
    assert ("update", "Renamed team") not in found  # that one was an agent's
    assert {item["author"]["ID"] for item in response.json()} == {str(SYSTEM_ACTOR_ID)}


def test_entries_written_before_agent_ids_still_verify_and_are_found_by_the_agent_id(owner, agent):
    """Older entries hold the account ID as author (null for the system) and no accountID: their hashes were
    computed without it, the chain still verifies, and the agent ID (or SYSTEM_ACTOR_ID) finds them."""
    from audit.chain import append, verify

    def old_entry(author_id, author_type):
        return AuditEntry(
            license_id=owner.license.pk, action="update", target="teams", object_id="x", entity_name="old",
            author_type=author_type, author_id=author_id, changes={"name": {"before": "a", "after": "b"}},
        )  # fmt: skip

    by_agent, by_system = append([old_entry(agent.account.pk, "api"), old_entry(None, "helpdeskSystem")])
    assert verify(owner.license.pk).ok
    found = owner.client.get("/v1/auditLog", {"authorID": str(agent.agent.pk)}).json()
    assert [item["ID"] for item in found] == [str(by_agent.id)]
    found = owner.client.get("/v1/auditLog", {"authorID": str(SYSTEM_ACTOR_ID), "pageSize": 100}).json()
    assert str(by_system.id) in [item["ID"] for item in found]
    assert {item["author"]["ID"] for item in found} == {str(SYSTEM_ACTOR_ID)}


@pytest.mark.parametrize(
    "params",
    [
        {"action": "created"},
        {"target": "tickets"},
        {"authorType": "robot"},
        {"authorID": "not-a-uuid"},
        {"action": ""},
        {"authorID": " "},
        {"timeRange.from": "2d"},
        {"timeRange.to": "yesterday"},
        {"timezone": "Mars/Olympus"},
        {"pageSize": "101"},
        {"pageSize": "0"},
        {"next.value": "2026-04-10T00:00:00Z"},
        {"next.value": "2026-04-10T00:00:00Z", "next.ID": "nope"},
    ],
    ids=lambda params: "&".join(f"{k}={v}" for k, v in params.items()),
)
def test_invalid_values_are_a_400_naming_the_parameter(owner, params):
    # when
    response = owner.client.get("/v1/auditLog", params)
    # then
    assert response.status_code == 400
    details = response.json()["details"]
    assert set(details) & set(params) | ({"next.ID"} & set(details)), details


def test_a_cursor_walk_visits_every_entry_once_newest_first(owner):
    # given many entries, several of them written in one transaction (equal timestamps are not a problem)
    for n in range(7):
        services.team_create(license=owner.license, name=f"Team {n}")
    services.teams_bulk_update(
        license=owner.license, teams=list(owner.license.teams.all()), fields={"reply_name": "Support"}
    )
    expected = [
        str(e.id) for e in AuditEntry.objects.filter(license=owner.license).order_by("-created_at", "-id")
    ]
    # when walking with the Link header's next cursor
    seen, url, params = [], "/v1/auditLog", {"pageSize": 3}
    while url:
        response = owner.client.get(url, params)
        assert response.status_code == 200, response.content
        assert response["X-Total-Results"] == str(len(expected))
        seen.extend(ids(response))
        match = re.search(r'<([^>]+)>; rel="next"', response.get("Link", ""))
        url, params = (match.group(1), None) if match else (None, None)
    # then
    assert seen == expected
    assert len(expected) > 9


def test_a_prev_cursor_walks_back(owner):
    # given
    for n in range(4):
        services.team_create(license=owner.license, name=f"Team {n}")
    first_page = owner.client.get("/v1/auditLog", {"pageSize": 2})
    second_page = owner.client.get(re.search(r'<([^>]+)>; rel="next"', first_page["Link"]).group(1))
    # when
    back = owner.client.get(re.search(r'<([^>]+)>; rel="prev"', second_page["Link"]).group(1))
    # then
    assert ids(back) == ids(first_page)


def test_the_query_count_does_not_grow_with_the_page(owner):
    # given
    for n in range(10):
        services.team_create(license=owner.license, name=f"Team {n}")

    def queries(page_size):
        with CaptureQueriesContext(connection) as captured:
            assert owner.client.get("/v1/auditLog", {"pageSize": page_size}).status_code == 200
        return len(captured)

    # then (after a first request, which also records the token's last use, and a second: the caller is served
    # from its process's copy from the third request on)
    queries(1)
    queries(1)
    assert queries(1) == queries(12)
