"""Collision detection: a ticket read carries its ETag; a PATCH with an If-Match that is no longer the ticket's
version is refused with 409 `ticket_changed` and the events since, and writes nothing. Without If-Match, nothing
changes for existing clients."""

from __future__ import annotations

import re

import pytest

from tests.factories import TicketFactory
from tickets.models import Message, Ticket


@pytest.fixture
def ticket(license):
    return TicketFactory(license=license)


def _etag(persona, ticket) -> str:
    response = persona.client.get(f"/v1/tickets/{ticket.pk}")
    assert response.status_code == 200
    return response["ETag"]


def _patch(persona, ticket, body, **headers):
    return persona.client.patch(f"/v1/tickets/{ticket.pk}", body, format="json", **headers)


def test_the_etag_names_the_tickets_version(owner, ticket):
    # given
    etag = _etag(owner, ticket)
    assert re.fullmatch(r'"\d{16}"', etag)
    assert _etag(owner, ticket) == etag  # reading changes nothing
    # when a PATCH made against it
    response = _patch(owner, ticket, {"priority": 10}, HTTP_IF_MATCH=etag)
    # then it passes, and answers the new version, the one a read then gives
    assert response.status_code == 200, response.content
    assert response["ETag"] != etag and response["ETag"] == _etag(owner, ticket)
    # the version is updatedAt, in microseconds
    ticket.refresh_from_db()
    assert response["ETag"].strip('"').startswith(str(int(ticket.updated_at.timestamp())))


def test_a_stale_if_match_is_409_with_the_events_since(owner, agent, ticket):
    # given two agents read the ticket; the other replies first
    etag = _etag(owner, ticket)
    assert _etag(agent, ticket) == etag
    assert (
        _patch(agent, ticket, {"message": {"text": "Sent a new parcel."}, "status": "pending"}).status_code
        == 200
    )
    messages = Message.objects.count()
    # when the first answers against what it read
    response = _patch(owner, ticket, {"message": {"text": "Let me check."}}, HTTP_IF_MATCH=etag)
    # then nothing is written, and the answer says what happened meanwhile
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "ticket_changed" and body["error"]
    assert body["details"]["ETag"] == _etag(owner, ticket)
    assert [e["type"] for e in body["details"]["events"]] == ["message", "status"]
    assert body["details"]["events"][0]["message"]["text"] == "Sent a new parcel."
    assert body["details"]["events"][0]["author"]["ID"] == str(agent.agent.pk)
    assert Message.objects.count() == messages
    # with the new version the reply goes through
    retry = _patch(
        owner, ticket, {"message": {"text": "Let me check."}}, HTTP_IF_MATCH=body["details"]["ETag"]
    )
    assert retry.status_code == 200, retry.content


def test_a_change_without_events_is_a_collision_too(owner, ticket):
    etag = _etag(owner, ticket)
    _patch(owner, ticket, {"subject": "Renamed"})  # no event of its own, a new version
    response = _patch(owner, ticket, {"priority": 20}, HTTP_IF_MATCH=etag)
    assert response.status_code == 409 and response.json()["details"]["events"] == []
    assert Ticket.objects.get(pk=ticket.pk).priority == 0


@pytest.mark.parametrize("form", ["W/{etag}", "*", '"1", {etag}'])
def test_if_match_accepts_weak_any_and_lists(owner, ticket, form):
    response = _patch(owner, ticket, {"priority": 10}, HTTP_IF_MATCH=form.format(etag=_etag(owner, ticket)))
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("value", ["1764087318901234", '"abc"', '""', "W/"])
def test_a_malformed_if_match_is_400(owner, ticket, value):
    response = _patch(owner, ticket, {"priority": 10}, HTTP_IF_MATCH=value)
    assert response.status_code == 400, response.content
    assert list(response.json()["details"]) == ["If-Match"]
    assert Ticket.objects.get(pk=ticket.pk).priority == 0


def test_without_if_match_a_write_goes_through_as_before(owner, agent, ticket):
    _etag(owner, ticket)
    _patch(agent, ticket, {"priority": 10})
    response = _patch(owner, ticket, {"priority": 20})
    assert response.status_code == 200 and response.json()["priority"] == 20


def test_the_sub_resources_answer_the_new_version(owner, ticket):
    etag = _etag(owner, ticket)
    moved = owner.client.put(f"/v1/tickets/{ticket.pk}/silo", {"silo": "archive"}, format="json")
    assert moved["ETag"] != etag and moved["ETag"] == _etag(owner, ticket)
    stale = _patch(owner, ticket, {"silo": "tickets"}, HTTP_IF_MATCH=etag)
    assert stale.status_code == 409
    [event] = stale.json()["details"]["events"]
    assert event["silo"] == {"old": "tickets", "new": "archive"}


def test_a_created_or_merged_ticket_comes_with_its_etag(owner, ticket):
    created = owner.client.post(
        "/v1/tickets",
        {"subject": "Hi", "requester": {"email": "a@example.com"}, "message": {"text": "Hello there"}},
        format="json",
    )
    assert created.status_code == 201 and created["ETag"] == _etag(owner, Ticket(pk=created.json()["ID"]))
    merged = owner.client.post(
        f"/v1/tickets/{ticket.pk}/childTickets", {"childTicketID": created.json()["ID"]}, format="json"
    )
    assert merged.status_code == 201 and merged["ETag"] == _etag(owner, ticket)
