"""Blocked and trusted senders: `/v1/blockedEmails`, `/v1/trustedEmails` (the generic resource tests), and what
mail in does with them (a blocked sender's new ticket in spam; a trusted sender's mail never spam unless
blocked too)."""

import pytest

from templates_app.addresses import license_address
from templates_app.api.senders import BlockedEmailViewSet, TrustedEmailViewSet
from templates_app.inbound.services import inbound_message_receive
from templates_app.models import BlockedSender, TrustedSender
from tests.mail_helpers import simple
from tests.resource_tests import Resource, ResourceTests
from tests.route_objects import _blocked_email_pk, _trusted_email_pk
from tickets.models import Ticket

INVALID = [
    ({}, "email"),
    ({"email": "not an address"}, "email"),
    ({"email": "@nodot"}, "email"),
    ({"email": "a@b@c.example"}, "email"),
    ({"email": "x" * 250 + "@a.example"}, "email"),
]


def _resource(viewset, make):
    return Resource(
        viewset=viewset,
        make=make,
        create={"email": "@spammy.example"},
        update={"email": "jo@spammy.example"},
        invalid=INVALID,
        readers={"owner", "normal", "viewer"},
        writers={"owner"},
        entity_name="@spammy.example",
        create_changes={"email": {"before": None, "after": "@spammy.example"}},
        update_changes={"email": {"before": "@spammy.example", "after": "jo@spammy.example"}},
        publishes=True,
    )


class TestBlockedEmailResource(ResourceTests):
    resource = _resource(BlockedEmailViewSet, _blocked_email_pk)


class TestTrustedEmailResource(ResourceTests):
    resource = _resource(TrustedEmailViewSet, _trusted_email_pk)


@pytest.mark.parametrize("path", ["/v1/blockedEmails", "/v1/trustedEmails"])
def test_an_entry_is_stored_lower_case_once_per_license(owner, path):
    created = owner.client.post(path, {"email": " Jo@Example.COM "}, format="json")
    assert created.status_code == 201 and created.json()["email"] == "jo@example.com"
    again = owner.client.post(path, {"email": "JO@example.com"}, format="json")
    assert again.status_code == 400 and "email" in again.json()["details"]
    assert [e["email"] for e in owner.client.get(path).json()] == ["jo@example.com"]


# --- mail in ---------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


def _receive(license, raw):
    result = inbound_message_receive(raw=raw, recipients=[license_address(license.pk)])
    return Ticket.objects.get(pk=result.ticket_id)


def test_a_blocked_senders_new_ticket_goes_to_spam(license):
    assert _receive(license, simple(sender="jo@spammy.example")).silo == "tickets"
    BlockedSender.objects.create(license=license, email="@spammy.example")
    assert _receive(license, simple(sender="jo@spammy.example")).silo == "spam"


def test_a_trusted_sender_wins_over_the_spam_flag_never_over_a_block(license):
    flagged = {"X-Spam-Flag": "YES"}
    assert _receive(license, simple(sender="jo@partner.example", headers=flagged)).silo == "spam"
    TrustedSender.objects.create(license=license, email="@partner.example")
    assert _receive(license, simple(sender="jo@partner.example", headers=flagged)).silo == "tickets"
    # a Reply-To naming a trusted address trusts nobody (anyone may write one)
    spoof = simple(sender="x@evil.test", headers={**flagged, "Reply-To": "jo@partner.example"})
    assert _receive(license, spoof).silo == "spam"
    BlockedSender.objects.create(license=license, email="jo@partner.example")
    assert _receive(license, simple(sender="jo@partner.example", headers=flagged)).silo == "spam"
    assert _receive(license, simple(sender="jo@partner.example")).silo == "spam"


def test_a_blocked_senders_reply_to_its_own_ticket_is_kept_there_without_reopening_it(license):
    from tickets.models import Message

    ticket = _receive(license, simple(sender="jo@spammy.example", headers={"Message-ID": "<first@spammy>"}))
    Ticket.objects.filter(pk=ticket.pk).update(status="solved")
    BlockedSender.objects.create(license=license, email="@spammy.example")
    reply = _receive(license, simple(sender="jo@spammy.example", headers={"In-Reply-To": "<first@spammy>"}))
    assert reply.pk == ticket.pk and Message.objects.filter(ticket=ticket).count() == 2
    assert (reply.status, reply.silo) == ("solved", "tickets")
    flagged = {"In-Reply-To": "<first@spammy>", "X-Spam-Flag": "YES"}
    assert _receive(license, simple(sender="jo@spammy.example", headers=flagged)).pk != ticket.pk
    # someone else of the blocked domain, not on the ticket: a new ticket in spam
    other = _receive(license, simple(sender="al@spammy.example", headers={"In-Reply-To": "<first@spammy>"}))
    assert other.pk != ticket.pk and other.silo == "spam"


# --- API ticket creates by a client author ------------------------------------------------------------------


def _api_ticket(persona, email, author="client"):
    body = {
        "subject": "Cheap pills",
        "requester": {"email": email},
        "message": {"text": "Buy now."},
        "author": {"type": author},
    }
    response = persona.client.post("/v1/tickets", body, format="json")
    assert response.status_code == 201, response.content
    return Ticket.objects.get(pk=response.json()["ID"])


def test_a_blocked_senders_ticket_through_the_api_by_a_client_goes_to_spam(agent, license):
    BlockedSender.objects.create(license=license, email="@spammy.example")
    assert _api_ticket(agent, "jo@spammy.example").silo == "spam"
    assert _api_ticket(agent, "jo@fine.example").silo == "tickets"


def test_an_agents_own_ticket_for_a_blocked_requester_is_the_agents_choice(agent, license):
    # the agent writes it (a phone call, say): no spam check on the agent's own words
    BlockedSender.objects.create(license=license, email="jo@spammy.example")
    assert _api_ticket(agent, "jo@spammy.example", author="agent").silo == "tickets"


def test_a_trusted_sender_is_not_spam_through_the_api_and_a_block_still_wins(agent, license):
    TrustedSender.objects.create(license=license, email="@partner.example")
    assert _api_ticket(agent, "jo@partner.example").silo == "tickets"
    BlockedSender.objects.create(license=license, email="jo@partner.example")
    assert _api_ticket(agent, "jo@partner.example").silo == "spam"
