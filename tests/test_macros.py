"""`/v1/macros` and `POST /v1/tickets/{ID}/macros/{macroID}`: the generic resource tests, then who sees which
macro, validation at save naming the action, and an application that is one write or nothing."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import TeamMembership
from tests.audit_helpers import entries_written
from tests.factories import AgentFactory, CustomFieldFactory, TagFactory, TeamFactory, TicketFactory
from tests.resource_tests import Resource, ResourceTests
from tickets.canned_responses.services import canned_response_create
from tickets.macros import services
from tickets.macros.api import MacroViewSet
from tickets.macros.models import Macro
from tickets.models import TicketEvent
from tickets.webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


def _shared(license, actions=(), name="Escalate"):
    return services.macro_create(license=license, name=name, visibility="shared", actions=list(actions))


class TestMacroResource(ResourceTests):
    resource = Resource(
        viewset=MacroViewSet,
        make=lambda license: _shared(license, name="Old").pk,
        create={
            "name": "Escalate",
            "visibility": "shared",
            "actions": [{"type": "setPriority", "value": 20}],
        },
        update={"name": "Escalate now", "actions": [{"type": "setStatus", "value": "pending"}]},
        invalid=[
            ({}, "name"),
            ({"actions": []}, "name"),
            ({"name": "x" * 201, "actions": []}, "name"),
            ({"name": "x", "actions": "setStatus"}, "actions"),
            ({"name": "x", "actions": [{"type": "explode", "value": 1}]}, "actions"),
            ({"name": "x", "actions": [{"type": "setPriority", "value": 5}]}, "actions"),
            ({"name": "x", "actions": [{"type": "addTags", "value": [str(uuid.uuid4())]}]}, "actions"),
            ({"name": "x", "visibility": "public", "actions": []}, "visibility"),
        ],
        readers={"owner", "normal", "viewer"},
        # normal agents write their private macros only (tested below); the generic object is shared
        writers={"owner"},
        entity_name="Escalate",
        create_changes={
            "name": {"before": None, "after": "Escalate"},
            "visibility": {"before": None, "after": "shared"},
        },
        update_changes={"name": {"before": "Escalate", "after": "Escalate now"}},
        publishes=True,
    )


# --- who sees and writes which macro ---------------------------------------------------------------------


def test_a_private_macro_is_its_agents_alone(owner, agent, viewer):
    # when a normal agent creates a macro (private by default)
    response = agent.client.post("/v1/macros", {"name": "Mine", "actions": []}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["visibility"], body["agentID"]) == ("private", str(agent.agent.pk))
    # then it is theirs to read and change, and no one else's, owners included
    assert agent.client.patch(f"/v1/macros/{body['ID']}", {"name": "Mine!"}, format="json").status_code == 200
    for other in (owner, viewer):
        assert body["ID"] not in [item["ID"] for item in other.client.get("/v1/macros").json()]
        assert other.client.get(f"/v1/macros/{body['ID']}").status_code == 404
        assert other.client.delete(f"/v1/macros/{body['ID']}").status_code in (403, 404)
    ticket = TicketFactory(license=owner.license)
    assert owner.client.post(f"/v1/tickets/{ticket.pk}/macros/{body['ID']}").status_code == 404
    assert Macro.objects.filter(pk=body["ID"]).exists()


def test_only_owners_write_shared_macros(owner, agent):
    shared = _shared(owner.license)
    created = agent.client.post(
        "/v1/macros", {"name": "x", "visibility": "shared", "actions": []}, format="json"
    )
    published = agent.client.post("/v1/macros", {"name": "x", "actions": []}, format="json").json()["ID"]
    made_shared = agent.client.patch(f"/v1/macros/{published}", {"visibility": "shared"}, format="json")
    for response in (
        created,
        made_shared,
        agent.client.patch(f"/v1/macros/{shared.pk}", {"name": "y"}, format="json"),
    ):
        assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert Macro.objects.get(pk=published).visibility == "private"
    # an owner shares its own private macro: no agent then
    mine = owner.client.post("/v1/macros", {"name": "o", "actions": []}, format="json").json()["ID"]
    shared_now = owner.client.patch(f"/v1/macros/{mine}", {"visibility": "shared"}, format="json").json()
    assert (shared_now["visibility"], shared_now["agentID"]) == ("shared", None)


# --- validation at save -----------------------------------------------------------------------------------


def test_a_bad_action_is_a_400_naming_its_index_and_key(owner, outsider):
    foreign_tag = TagFactory(license=outsider.license)
    actions = [{"type": "setStatus", "value": "pending"}, {"type": "addTags", "value": [str(foreign_tag.pk)]}]
    response = owner.client.post(
        "/v1/macros", {"name": "x", "visibility": "shared", "actions": actions}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["details"] == {
        "actions": {"1": {"value": [f"'{foreign_tag.pk}' does not exist in this license."]}}
    }
    unknown = [{"type": "setStatus", "value": "open"}, {"type": "fly", "value": 1}]
    response = owner.client.post("/v1/macros", {"name": "x", "actions": unknown}, format="json")
    assert list(response.json()["details"]["actions"]) == ["1"]
    assert "type" in response.json()["details"]["actions"]["1"]
    placeholder = [{"type": "sendMessage", "value": {"text": "Hi {{client.name}}"}}]
    response = owner.client.post("/v1/macros", {"name": "x", "actions": placeholder}, format="json")
    assert response.json()["details"] == {
        "actions": {"0": {"value": ["Unknown placeholder {{client.name}}."]}}
    }
    two = [{"type": "sendMessage", "value": {"text": "a"}}, {"type": "reply", "value": {"text": "b"}}]
    response = owner.client.post("/v1/macros", {"name": "x", "actions": two}, format="json")
    assert "type" in response.json()["details"]["actions"]["1"]
    assert not Macro.objects.exists()


def test_more_than_100_actions_is_a_400_naming_the_limit(owner):
    actions = [{"type": "setPriority", "value": 10}] * 101
    response = owner.client.post("/v1/macros", {"name": "x", "actions": actions}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "limit_actions"
    assert response.json()["details"] == {"actions": ["At most 100 actions."]}
    actions = [{"type": "setPriority", "value": 10}] * 100
    assert (
        owner.client.post("/v1/macros", {"name": "x", "actions": actions}, format="json").status_code == 201
    )


# --- application --------------------------------------------------------------------------------------------


@pytest.fixture
def team_setup(owner, agent):
    team = TeamFactory(license=owner.license)
    TeamMembership.objects.create(agent=agent.agent, team=team)
    tag = TagFactory(license=owner.license, name="shipping")
    canned = canned_response_create(
        license=owner.license,
        text="Hello {{requester.name}}, #{{ticket.shortID}} has shipped.\n{{agent.name}}",
    )
    ticket = TicketFactory(
        license=owner.license,
        subject="Where is it?",
        requester={"email": "jane@example.com", "name": "Jane"},
        assignment={"team": team},
        teams=[team],
    )
    return team, tag, canned, ticket


def six_actions(tag, agent, canned):
    return [
        {"type": "setStatus", "value": "pending"},
        {"type": "setPriority", "value": 20},
        {"type": "addTags", "value": [str(tag.pk)]},
        {"type": "addFollowers", "value": [str(agent.pk)]},
        {"type": "assignAgent", "value": str(agent.pk)},
        {"type": "reply", "value": {"cannedResponseID": str(canned.pk), "isPrivate": False}},
    ]


def _hooks(license, *event_types):
    for event_type in event_types:
        Webhook.objects.create(
            license=license,
            name=event_type,
            url="https://hooks.example.com/",
            event_type=event_type,
            secret="s" * 20,
        )


def test_applying_a_macro_is_one_write(owner, agent, team_setup):
    team, tag, canned, ticket = team_setup
    macro = _shared(owner.license, six_actions(tag, agent.agent, canned))
    _hooks(owner.license, "tickets.update", "tickets.events.tags")
    events_before = TicketEvent.objects.filter(ticket=ticket).count()
    # when a normal agent applies it
    with entries_written() as written:
        response = agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}")
    # then every action is done
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["priority"]) == ("pending", 20)
    assert body["tagIDs"] == [str(tag.pk)]
    assert body["followers"] == [str(agent.agent.pk)]
    assert body["assignment"]["agent"]["ID"] == str(agent.agent.pk)
    [reply] = [
        event for event in body["events"] if event["type"] == "message" and event["author"]["type"] == "agent"
    ]
    assert reply["author"]["ID"] == str(agent.agent.pk) and reply["message"]["isPrivate"] is False
    assert reply["message"]["text"] == f"Hello Jane, #{ticket.short_id} has shipped.\n{agent.agent.name}"
    # in one batch of events (one write's time), announced by one tickets.update webhook
    new = TicketEvent.objects.filter(ticket=ticket).order_by("created_at", "position")[events_before:]
    assert sorted(event.type for event in new) == sorted(
        ["status", "priority", "tags", "followers", "assignment", "message"]
    )
    assert len({(event.created_at, event.author_agent_id) for event in new}) == 1
    assert (
        list(written) == []
    )  # a ticket's trail is its events (tickets are not in the audit log), as a PATCH's
    deliveries = WebhookDelivery.objects.filter(license=owner.license)
    assert sorted(d.event_type for d in deliveries) == ["tickets.events.tags", "tickets.update"]


def test_a_macro_costs_no_more_sql_than_the_same_patch(owner, agent, team_setup):
    team, tag, canned, ticket = team_setup
    other = TicketFactory(license=owner.license, assignment={"team": team}, teams=[team])
    macro = _shared(owner.license, six_actions(tag, agent.agent, canned))
    agent.client.get("/v1/macros")  # the token's last use is recorded once: not by either write measured
    agent.client.get("/v1/macros")  # and the caller is served from its process's copy from the third request
    patch = {
        "status": "pending",
        "priority": 20,
        "tagIDs": [str(tag.pk)],
        "followers": [str(agent.agent.pk)],
        "assignment": {"agent": {"ID": str(agent.agent.pk)}},
        "message": {"text": "Hello Client, it has shipped."},
    }
    # the license's copies kept per process (webhooks, own addresses...) are read by its first write only
    warm = TicketFactory(license=owner.license, assignment={"team": team}, teams=[team])
    assert agent.client.patch(f"/v1/tickets/{warm.pk}", patch, format="json").status_code == 200
    with CaptureQueriesContext(connection) as by_macro:
        assert agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}").status_code == 200
    with CaptureQueriesContext(connection) as by_patch:
        assert agent.client.patch(f"/v1/tickets/{other.pk}", patch, format="json").status_code == 200
    print(f"\nSQL statements: macro of 6 actions {len(by_macro)}, the same PATCH {len(by_patch)}")
    # Besides the PATCH's: the macro, the ticket's lock taken before the actions read (and the nested unit of
    # work's savepoint and release), the ticket's tags and followers, the canned response, the latest message
    # (placeholders), the agent's team membership and the canned response's files (none here); and the view's
    # read of the ticket, which a PATCH no longer makes (it reads it once, under its lock: issue 34).
    assert len(by_macro) <= len(by_patch) + 11


def _unchanged(ticket):
    ticket.refresh_from_db()
    return (ticket.status, ticket.priority, ticket.assignment_agent_id, list(ticket.tags.all()))


def test_an_action_that_cannot_apply_is_a_409_and_nothing_changes(owner, agent, team_setup):
    team, tag, canned, ticket = team_setup
    outsider_of_team = AgentFactory(license=owner.license)
    macro = _shared(
        owner.license,
        [
            {"type": "setStatus", "value": "pending"},
            {"type": "addTags", "value": [str(tag.pk)]},
            {"type": "assignAgent", "value": str(outsider_of_team.pk)},
            {"type": "sendMessage", "value": {"text": "On it.", "isPrivate": True}},
        ],
    )
    _hooks(owner.license, "tickets.update")
    before, events = _unchanged(ticket), TicketEvent.objects.filter(ticket=ticket).count()
    response = agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}")
    assert response.status_code == 409, response.content
    assert response.json()["code"] == "action_not_applicable"
    assert response.json()["error"].startswith("Action 2 (assignAgent) cannot apply")
    assert list(response.json()["details"]["actions"]) == ["2"]
    assert _unchanged(ticket) == before
    assert TicketEvent.objects.filter(ticket=ticket).count() == events
    assert not WebhookDelivery.objects.exists()


def test_a_tag_deleted_since_is_a_409_naming_it(owner, agent, team_setup):
    team, tag, canned, ticket = team_setup
    macro = _shared(
        owner.license,
        [{"type": "setStatus", "value": "pending"}, {"type": "addTags", "value": [str(tag.pk)]}],
    )
    tag_id = tag.pk
    tag.delete()
    response = agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}")
    assert response.status_code == 409
    assert response.json()["error"] == f"Action 1 (addTags) cannot apply: Tag '{tag_id}' no longer exists."
    ticket.refresh_from_db()
    assert ticket.status == "open"


def test_a_ticket_in_a_read_only_silo_is_a_409_unless_the_macro_moves_it_back(owner, agent):
    ticket = TicketFactory(license=owner.license, silo="archive")
    change = _shared(owner.license, [{"type": "setStatus", "value": "closed"}])
    response = agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{change.pk}")
    assert response.status_code == 409 and "'archive'" in response.json()["error"]
    back = _shared(owner.license, [{"type": "moveToSilo", "value": "tickets"}], name="Back")
    response = agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{back.pk}")
    assert response.status_code == 200 and response.json()["silo"] == "tickets"


def test_set_custom_field_and_remove_tags(owner, agent):
    tag, kept = TagFactory(license=owner.license), TagFactory(license=owner.license)
    for key in ("region", "plan"):
        CustomFieldFactory(license=owner.license, api_key=key)
    ticket = TicketFactory(
        license=owner.license, tags=[tag, kept], custom_fields={"region": "EU", "plan": "pro"}
    )
    macro = _shared(
        owner.license,
        [
            {"type": "removeTags", "value": [str(tag.pk)]},
            {"type": "setCustomField", "value": {"apiKey": "plan", "value": "team"}},
        ],
    )
    body = agent.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}").json()
    assert body["tagIDs"] == [str(kept.pk)]
    assert body["customFields"] == {"region": "EU", "plan": "team"}


def test_a_viewer_applies_nothing(owner, viewer):
    ticket = TicketFactory(license=owner.license)
    macro = _shared(owner.license, [{"type": "setStatus", "value": "closed"}])
    response = viewer.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro.pk}")
    assert response.status_code == 403
    ticket.refresh_from_db()
    assert ticket.status == "open"


def test_an_unknown_macro_or_ticket_is_a_404(owner, outsider):
    ticket = TicketFactory(license=owner.license)
    foreign = _shared(outsider.license)
    assert owner.client.post(f"/v1/tickets/{ticket.pk}/macros/{foreign.pk}").status_code == 404
    assert owner.client.post(f"/v1/tickets/{ticket.pk}/macros/not-a-uuid").status_code == 404
    mine = _shared(owner.license)
    assert outsider.client.post(f"/v1/tickets/{ticket.pk}/macros/{mine.pk}").status_code == 404


def test_the_admin_writes_through_the_service(client, license):
    from accounts.models import Account

    client.force_login(Account.objects.create_superuser(email="admin@example.com", password="x"))
    actions = '[{"type": "setStatus", "value": "closed"}]'
    data = {"license": license.pk, "name": "Close", "visibility": "shared", "agent": "", "actions": actions}
    response = client.post("/admin/tickets/macro/add/", data)
    assert response.status_code == 302, response.content
    assert Macro.objects.get().actions == [{"type": "setStatus", "value": "closed"}]
    # a bad action is the form's error, naming it
    response = client.post("/admin/tickets/macro/add/", {**data, "actions": '[{"type": "fly", "value": 1}]'})
    assert response.status_code == 200 and b"Unknown action type" in response.content
    # a private macro needs its agent
    response = client.post("/admin/tickets/macro/add/", {**data, "visibility": "private"})
    assert response.status_code == 200 and b"needs its agent" in response.content
    assert Macro.objects.count() == 1


def test_a_private_macro_names_only_canned_responses_its_agent_sees(owner, agent):
    theirs = TeamFactory(license=owner.license)
    hidden = canned_response_create(license=owner.license, text="Team only", team=theirs)
    reply = [{"type": "reply", "value": {"cannedResponseID": str(hidden.pk)}}]
    response = agent.client.post("/v1/macros", {"name": "x", "actions": reply}, format="json")
    assert response.status_code == 400
    assert response.json()["details"] == {
        "actions": {"0": {"value": [f"Canned response '{hidden.pk}' is of a team you are not in."]}}
    }
    TeamMembership.objects.create(agent=agent.agent, team=theirs)
    assert agent.client.post("/v1/macros", {"name": "x", "actions": reply}, format="json").status_code == 201


def test_a_canned_replys_files_go_with_it(owner, tmp_path, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from templates_app.models import OutboundMessage
    from tickets.canned_responses.models import CannedResponse
    from tickets.models import Message

    # given a canned response with a file, and a macro that replies with it
    settings.MEDIA_ROOT = str(tmp_path)
    txn = owner.client.post("/v1/transactions").json()["ID"]
    upload = SimpleUploadedFile("terms.txt", b"our terms", content_type="text/plain")
    owner.client.post(f"/v1/transactions/{txn}/attachments", {"attachments": [upload]})
    canned = owner.client.post(
        "/v1/cannedResponses", {"text": "See the terms.", "transactionID": txn}, format="json"
    ).json()
    macro = owner.client.post(
        "/v1/macros",
        {
            "name": "terms",
            "visibility": "shared",
            "actions": [{"type": "reply", "value": {"cannedResponseID": canned["ID"]}}],
        },
        format="json",
    ).json()
    ticket = TicketFactory(license=owner.license, requester_email="ann@example.com")
    # when it is applied
    response = owner.client.post(f"/v1/tickets/{ticket.pk}/macros/{macro['ID']}")
    assert response.status_code == 200, response.content
    # then the reply carries a copy of the file, and the mail to the requester too
    message = Message.objects.filter(ticket=ticket, text__startswith="See the terms").get()
    [copy] = message.transaction.attachments.all()
    assert (copy.name, copy.file.read()) == ("terms.txt", b"our terms")
    [original] = CannedResponse.objects.get(pk=canned["ID"]).attachments.all()
    assert copy.pk != original.pk and copy.file.name != original.file.name  # the ticket's purge keeps it
    from templates_app.ticket_delivery import split_attachments

    assert OutboundMessage.objects.filter(ticket_message_id=message.pk, to="ann@example.com").exists()
    attached, _linked = split_attachments(message)  # what mail out attaches when it sends
    assert [a.name for a in attached] == ["terms.txt"]
