"""The ticket sub-resources: followers and tags added and removed, the silo set, a rating request sent now.
Each is a write of the ticket services (one event, webhooks), refuses another license's IDs with 400, a viewer
with 403 and (tests/test_tenancy.py's walk) another license's ticket with 404. Undoing a merge:
tests/test_ticket_merges.py."""

from __future__ import annotations

import pytest

from templates_app import mail as outbox
from templates_app.models import OutboundMessage
from tests.factories import AgentFactory, TagFactory, TicketFactory
from tickets.models import Ticket, TicketEvent
from tickets.webhooks.models import Webhook, WebhookDelivery


@pytest.fixture
def ticket(license):
    return TicketFactory(license=license, requester={"email": "jane@customer.example", "name": "Jane"})


def _url(ticket, name):
    return f"/v1/tickets/{ticket.pk}/{name}"


def _events(ticket, type_):
    return list(TicketEvent.objects.filter(ticket=ticket, type=type_).values_list("payload", flat=True))


def _hook(license, event_type):
    return Webhook.objects.create(
        license=license, name="h", url="https://hooks.example.com/", event_type=event_type, secret="x" * 20
    )


# --- followers and tags ----------------------------------------------------------------------------------

SETS = [
    pytest.param("followers", "agentIDs", lambda license: AgentFactory(license=license), id="followers"),
    pytest.param("tags", "tagIDs", lambda license: TagFactory(license=license), id="tags"),
]


@pytest.mark.parametrize(("name", "field", "make"), SETS)
def test_it_adds_and_removes(owner, ticket, name, field, make, django_capture_on_commit_callbacks):
    # given one already there and a webhook on the relation's events
    first, second = make(owner.license), make(owner.license)
    owner.client.post(_url(ticket, name), {field: [str(first.pk)]}, format="json")
    _hook(owner.license, f"tickets.events.{name}")
    # when a second is added, then the first removed
    added = owner.client.post(_url(ticket, name), {field: [str(second.pk)]}, format="json")
    removed = owner.client.delete(_url(ticket, name), {field: [str(first.pk)]}, format="json")
    # then
    assert added.status_code == 201, added.content
    doc_key = "followers" if name == "followers" else "tagIDs"
    assert set(added.json()[doc_key]) == {str(first.pk), str(second.pk)}
    assert added["ETag"].strip('"').isdigit()
    assert removed.status_code == 204, removed.content
    assert owner.client.get(f"/v1/tickets/{ticket.pk}").json()[doc_key] == [str(second.pk)]
    assert _events(ticket, name) == [
        {"added": [str(first.pk)], "removed": []},
        {"added": [str(second.pk)], "removed": []},
        {"added": [], "removed": [str(first.pk)]},
    ]
    assert WebhookDelivery.objects.filter(event_type=f"tickets.events.{name}").count() == 2


@pytest.mark.parametrize(("name", "field", "make"), SETS)
def test_a_change_that_changes_nothing_writes_nothing(owner, ticket, name, field, make):
    there, absent = make(owner.license), make(owner.license)
    first = owner.client.post(_url(ticket, name), {field: [str(there.pk)]}, format="json")
    # when: added again, and one removed that is not there
    again = owner.client.post(_url(ticket, name), {field: [str(there.pk)]}, format="json")
    gone = owner.client.delete(_url(ticket, name), {field: [str(absent.pk)]}, format="json")
    # then: no event, the same version
    assert (again.status_code, gone.status_code) == (201, 204)
    assert again["ETag"] == first["ETag"] and len(_events(ticket, name)) == 1


@pytest.mark.parametrize(("name", "field", "make"), SETS)
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "This field is required."),
        (None, "Name at least one."),  # an empty list
        ("bad", "Expected an array of UUID strings."),
        ("foreign", "does not exist in this license."),
    ],
)
def test_bad_bodies_are_400_naming_the_field(owner, outsider, ticket, name, field, make, body, message):
    if body == "foreign":
        body = {field: [str(make(outsider.license).pk)]}
    elif body == "bad":
        body = {field: ["not-a-uuid"]}
    elif body is None:
        body = {field: []}
    for method in ("post", "delete"):
        response = getattr(owner.client, method)(_url(ticket, name), body, format="json")
        assert response.status_code == 400, (method, response.content)
        assert response.json()["code"] == "invalid"
        assert message in response.json()["details"][field][0]
    assert _events(ticket, name) == []


def test_unknown_fields_are_refused(owner, ticket):
    response = owner.client.post(_url(ticket, "tags"), {"tagIDs": [], "tagIds": []}, format="json")
    assert response.status_code == 400 and response.json()["details"]["tagIds"] == ["Unknown field."]


def test_a_ticket_in_a_read_only_silo_keeps_its_followers(owner, ticket):
    Ticket.objects.filter(pk=ticket.pk).update(silo="archive")
    response = owner.client.post(
        _url(ticket, "followers"), {"agentIDs": [str(owner.agent.pk)]}, format="json"
    )
    assert response.status_code == 409 and response.json()["code"] == "read_only_silo"
    assert not ticket.followers.exists()


# --- silo --------------------------------------------------------------------------------------------------


def test_it_moves_the_ticket_between_silos(owner, ticket, django_capture_on_commit_callbacks):
    _hook(owner.license, "tickets.update")
    archived = owner.client.put(_url(ticket, "silo"), {"silo": "archive"}, format="json")
    assert archived.status_code == 200, archived.content
    assert archived.json()["silo"] == "archive" and archived["ETag"]
    # the one change a read-only silo allows: moving back
    back = owner.client.put(_url(ticket, "silo"), {"silo": "tickets"}, format="json")
    assert back.status_code == 200 and back.json()["silo"] == "tickets"
    assert _events(ticket, "silo") == [
        {"old": "tickets", "new": "archive"},
        {"old": "archive", "new": "tickets"},
    ]
    assert WebhookDelivery.objects.filter(event_type="tickets.update").count() == 2


@pytest.mark.parametrize("body", [{}, {"silo": "attic"}, {"silo": "archive", "status": "open"}])
def test_a_bad_silo_is_400(owner, ticket, body):
    response = owner.client.put(_url(ticket, "silo"), body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()["details"]) & {"silo", "status"}
    assert Ticket.objects.get(pk=ticket.pk).silo == "tickets"


# --- rating requests -------------------------------------------------------------------------------------


def test_it_sends_the_rating_request_now(owner, ticket, django_capture_on_commit_callbacks):
    # when asked twice (a double click)
    first = owner.client.post(_url(ticket, "ratingRequests"), format="json")
    second = owner.client.post(_url(ticket, "ratingRequests"), {}, format="json")
    # then one e-mail to the requester, with the two links, and the flag set
    assert (first.status_code, second.status_code) == (201, 201), first.content
    assert first.json()["ratingRequeestSent"] is True
    [queued] = OutboundMessage.objects.filter(kind="rating")
    outbox.deliver(message_id=queued.pk)  # rendered by the worker before it sends (issue 34)
    mail = OutboundMessage.objects.get(pk=queued.pk)
    assert mail.to == "jane@customer.example"
    assert "Good: http" in mail.text and "Bad: http" in mail.text
    # solving later sends no other
    owner.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved"}, format="json")
    assert OutboundMessage.objects.filter(kind="rating").count() == 1


def test_a_rating_request_takes_no_body_and_no_read_only_ticket(owner, ticket):
    response = owner.client.post(_url(ticket, "ratingRequests"), {"score": "good"}, format="json")
    assert response.status_code == 400 and response.json()["details"] == {"score": ["Unknown field."]}
    Ticket.objects.filter(pk=ticket.pk).update(silo="spam")
    response = owner.client.post(_url(ticket, "ratingRequests"), format="json")
    assert response.status_code == 409 and response.json()["code"] == "read_only_silo"
    assert not OutboundMessage.objects.filter(kind="rating").exists()


# --- roles -------------------------------------------------------------------------------------------------


def _calls(license):
    agent, tag = AgentFactory(license=license), TagFactory(license=license)
    return [
        ("post", "followers", {"agentIDs": [str(agent.pk)]}, 201),
        ("delete", "followers", {"agentIDs": [str(agent.pk)]}, 204),
        ("post", "tags", {"tagIDs": [str(tag.pk)]}, 201),
        ("delete", "tags", {"tagIDs": [str(tag.pk)]}, 204),
        ("put", "silo", {"silo": "tickets"}, 200),
        ("post", "ratingRequests", {}, 201),
    ]


@pytest.mark.parametrize(("persona", "allowed"), [("owner", True), ("normal", True), ("viewer", False)])
def test_owners_and_normal_agents_write_viewers_do_not(personas, ticket, persona, allowed):
    client = personas[persona].client
    for method, name, body, success in _calls(ticket.license):
        response = getattr(client, method)(_url(ticket, name), body, format="json")
        expected = success if allowed else 403
        assert response.status_code == expected, (method, name, response.content)
    assert TicketEvent.objects.filter(ticket=ticket).exclude(type="message").exists() is allowed


# --- the OpenAPI document ----------------------------------------------------------------------------------


def test_the_document_shows_the_bodies_of_the_deletes_and_the_collision_headers(client, db):
    paths = client.get("/v1/openapi.json", HTTP_USER_AGENT="t").json()["paths"]
    for name, field in (("followers", "agentIDs"), ("tags", "tagIDs")):
        operation = paths[f"/v1/tickets/{{ticketID}}/{name}"]["delete"]
        [example] = operation["requestBody"]["content"]["application/json"]["examples"].values()
        assert list(example["value"]) == [field]
    ticket = paths["/v1/tickets/{ticketID}"]
    assert "ETag" in ticket["get"]["responses"]["200"]["headers"]
    assert "ETag" in ticket["patch"]["responses"]["200"]["headers"]
    assert [p["name"] for p in ticket["patch"]["parameters"] if p["in"] == "header"] == ["If-Match"]
    assert paths["/v1/tickets/{ticketID}/childTickets/{childID}"]["delete"]["summary"] == "Undo a merge"
