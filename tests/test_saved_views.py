"""Views: saved ticket searches, checked at save by the search itself; private ones invisible to everyone else;
their tickets and exact counts as the search answers them."""

import pytest

from tests.factories import AgentFactory, TagFactory, TeamFactory, TicketFactory
from tests.resource_tests import Resource, ResourceTests
from tickets.saved_views.api import ViewViewSet
from tickets.saved_views.models import View
from tickets.saved_views.services import MAX_VIEWS


def _shared(license, **fields):
    return View.objects.create(license=license, name=fields.pop("name", "Open"), **fields)


def _error(response, status):
    assert response.status_code == status, response.content
    return response.json()


class TestViewResource(ResourceTests):
    resource = Resource(
        viewset=ViewViewSet,
        make=lambda license: _shared(license).pk,
        create={"name": "Unassigned", "filters": {"assignment.agentID": "none", "status": "open"}},
        update={"name": "Unassigned, urgent", "filters": {"priority": "20"}, "ordering": 2},
        invalid=[
            ({}, "name"),
            ({"name": "x" * 201}, "name"),
            ({"name": "x", "filters": {"colour": "red"}}, "filters"),
            ({"name": "x", "filters": {"status": "lost"}}, "filters"),
            ({"name": "x", "filters": {"timezone": "Europe/Paris"}}, "filters"),
            ({"name": "x", "filters": ["status"]}, "filters"),
            ({"name": "x", "ordering": "first"}, "ordering"),
        ],
        readers={"owner", "normal", "viewer"},
        writers={"owner"},  # shared views; normal agents write their private ones (below)
        entity_name="Unassigned",
        create_changes={"name": {"before": None, "after": "Unassigned"}},
        update_changes={"name": {"before": "Unassigned", "after": "Unassigned, urgent"}},
        publishes=True,
    )


def test_an_invalid_filter_is_refused_with_the_searchs_own_answer(owner):
    # given what the search answers
    searched = _error(owner.client.get("/v1/tickets?priority=7"), 400)
    # when a view saves the same parameter
    saved = _error(
        owner.client.post("/v1/views", {"name": "x", "filters": {"priority": "7"}}, format="json"), 400
    )
    # then the same message, under filters
    assert saved["details"] == {"filters": searched["details"]}
    assert not View.objects.exists()


def test_an_id_of_another_license_is_refused_at_save(owner, outsider):
    foreign = TeamFactory(license=outsider.license)
    body = {"name": "x", "filters": {"teamIDs[]": [str(foreign.pk)]}}
    details = _error(owner.client.post("/v1/views", body, format="json"), 400)["details"]
    assert "does not exist in this license" in details["filters"]["teamIDs[]"][0]


def test_a_private_view_is_invisible_to_everyone_else_owners_included(owner, agent, viewer):
    # given a normal agent's private view
    created = agent.client.post(
        "/v1/views", {"name": "Mine", "agentID": str(agent.agent.pk), "filters": {}}, format="json"
    )
    assert created.status_code == 201, created.content
    view_id = created.json()["ID"]
    # then its agent sees it, changes it, counts it
    assert [v["ID"] for v in agent.client.get("/v1/views").json()] == [view_id]
    assert agent.client.patch(f"/v1/views/{view_id}", {"name": "Mine!"}, format="json").status_code == 200
    assert [c["ID"] for c in agent.client.get("/v1/views/counts").json()] == [view_id]
    # and no one else, not even an owner
    for other in (owner, viewer):
        assert other.client.get("/v1/views").json() == []
        assert other.client.get("/v1/views/counts").json() == []
        for path in (f"/v1/views/{view_id}", f"/v1/views/{view_id}/tickets"):
            assert _error(other.client.get(path), 404)["code"] == "not_found"
    assert _error(owner.client.delete(f"/v1/views/{view_id}"), 404)["code"] == "not_found"
    assert View.objects.filter(pk=view_id).exists()


def test_a_normal_agent_cannot_save_a_shared_view_nor_one_for_someone_else(owner, agent):
    shared = _error(agent.client.post("/v1/views", {"name": "All"}, format="json"), 403)
    assert shared["code"] == "permission_denied"
    other = _error(
        agent.client.post("/v1/views", {"name": "x", "agentID": str(owner.agent.pk)}, format="json"), 400
    )
    assert "agentID" in other["details"]
    outsider_id = AgentFactory().pk
    foreign = _error(
        agent.client.post("/v1/views", {"name": "x", "agentID": str(outsider_id)}, format="json"), 400
    )
    assert "does not exist in this license" in foreign["details"]["agentID"][0]
    assert not View.objects.exists()


def test_an_agent_keeps_at_most_100_views(agent):
    View.objects.bulk_create(
        View(license=agent.license, agent=agent.agent, name=f"v{i}") for i in range(MAX_VIEWS)
    )
    body = {"name": "one more", "agentID": str(agent.agent.pk)}
    refused = _error(agent.client.post("/v1/views", body, format="json"), 409)
    assert refused["code"] == "limit_reached" and "100" in refused["error"]
    assert View.objects.count() == MAX_VIEWS


def test_a_views_tickets_are_the_search_with_its_filters_paged_as_search(owner):
    # given 3 urgent tickets and one normal
    urgent = [TicketFactory(license=owner.license, priority=20).pk for _ in range(3)]
    TicketFactory(license=owner.license, priority=0)
    view_id = owner.client.post(
        "/v1/views", {"name": "Urgent", "filters": {"priority": 20}}, format="json"
    ).json()["ID"]
    # when its tickets are read two at a time
    first = owner.client.get(f"/v1/views/{view_id}/tickets?pageSize=2")
    searched = owner.client.get("/v1/tickets?priority=20&pageSize=2")
    # then as the search answers: same tickets, same totals, a cursor to the next page
    assert first.status_code == 200, first.content
    assert [t["ID"] for t in first.json()] == [t["ID"] for t in searched.json()]
    assert first["X-Total-Results"] == searched["X-Total-Results"] == "3"
    assert first["X-Total-Pages"] == "2"
    next_url = first["Link"].split(";")[0].strip("<>")
    assert f"/v1/views/{view_id}/tickets?" in next_url
    second = owner.client.get(next_url[next_url.index("/v1/") :])
    assert sorted(t["ID"] for t in first.json() + second.json()) == sorted(map(str, urgent))
    # a search parameter is the view's, not the request's
    refused = _error(owner.client.get(f"/v1/views/{view_id}/tickets?priority=0"), 400)
    assert "priority" in refused["details"]


@pytest.mark.usefixtures("eager_tasks")
def test_counts_are_exact_after_writes_and_equal_the_searchs_total(owner):
    # given three views
    tag = TagFactory(license=owner.license, name="vip")
    bodies = [
        {"name": "Open", "filters": {}},
        {"name": "VIP", "filters": {"tagIDs[]": [str(tag.pk)], "status": "open"}},
        {"name": "Solved", "filters": {"status": "solved"}},
    ]
    ids = [owner.client.post("/v1/views", body, format="json").json()["ID"] for body in bodies]
    tickets = [TicketFactory(license=owner.license) for _ in range(3)]

    def counts():
        response = owner.client.get("/v1/views/counts")
        assert response.status_code == 200, response.content
        return {c["ID"]: c["count"] for c in response.json()}

    assert counts() == {ids[0]: 3, ids[1]: 0, ids[2]: 0}
    # when tickets are written through the API
    owner.client.patch(f"/v1/tickets/{tickets[0].pk}", {"tagIDs": [str(tag.pk)]}, format="json")
    owner.client.patch(f"/v1/tickets/{tickets[1].pk}", {"status": "solved"}, format="json")
    # then every count moved, and each equals X-Total-Results of the same search
    assert counts() == {ids[0]: 2, ids[1]: 1, ids[2]: 1}
    for view_id, count in counts().items():
        assert owner.client.get(f"/v1/views/{view_id}/tickets")["X-Total-Results"] == str(count)


def test_counts_refuse_an_unknown_parameter(owner):
    assert "status" in _error(owner.client.get("/v1/views/counts?status=open"), 400)["details"]


def test_counts_refuse_an_unknown_time_zone_with_or_without_views(owner):
    # given no view at first (found by the fuzzer: nothing read the zone, a 200 with `[]`), then one
    for _ in range(2):
        # when the counts are asked in a zone that does not exist, then the search's own 400
        details = _error(owner.client.get("/v1/views/counts?timezone=Mars/Olympus"), 400)["details"]
        assert details == {
            "timezone": ["Unknown time zone 'Mars/Olympus': expected an IANA name such as Europe/Warsaw."]
        }
        owner.client.post("/v1/views", {"name": "Open", "filters": {"status": "open"}}, format="json")
    assert owner.client.get("/v1/views/counts?timezone=Europe/Warsaw").status_code == 200
    assert _error(owner.client.get("/v1/tickets?timezone=Mars/Olympus"), 400)["details"] == details


def test_a_view_whose_team_was_deleted_matches_nothing(owner):
    team = TeamFactory(license=owner.license)
    TicketFactory(license=owner.license, teams=[team])
    view_id = owner.client.post(
        "/v1/views", {"name": "Team", "filters": {"teamIDs[]": [str(team.pk)]}}, format="json"
    ).json()["ID"]
    assert owner.client.get("/v1/views/counts").json() == [{"ID": view_id, "count": 1}]
    owner.client.delete(f"/v1/teams/{team.pk}")
    assert owner.client.get("/v1/views/counts").json() == [{"ID": view_id, "count": 0}]
    listed = owner.client.get(f"/v1/views/{view_id}/tickets")
    assert (listed.status_code, listed.json(), listed["X-Total-Results"]) == (200, [], "0")


def test_the_admin_saves_shared_views_through_the_service_and_hides_private_ones(staff_owner, agent):
    private = View.objects.create(license=agent.license, agent=agent.agent, name="Mine")
    refused = staff_owner.post(
        "/admin/tickets/view/add/",
        {"license": agent.license.pk, "name": "Bad", "filters": '{"colour": "red"}', "ordering": "0"},
    )
    assert refused.status_code == 200 and not View.objects.filter(name="Bad").exists()
    saved = staff_owner.post(
        "/admin/tickets/view/add/",
        {"license": agent.license.pk, "name": "Urgent", "filters": '{"priority": "20"}', "ordering": "0"},
    )
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    assert View.objects.get(name="Urgent").agent is None
    # an owner sees the shared views here, never an agent's private one
    listed = staff_owner.get("/admin/tickets/view/")
    assert [v.name for v in listed.context["cl"].result_list] == ["Urgent"]
    assert staff_owner.get(f"/admin/tickets/view/{private.pk}/change/").status_code in (302, 404)
