"""Who may write into a ticket by e-mail (templates_app.inbound.authenticity): the spoofs of issue #32. A mail
threads onto its ticket as the requester only when its author (From) is on the ticket and the mail is authentic
(the signed reply address, a trusted MTA's Authentication-Results, or a DKIM signature we verify against a real
DNS server on loopback); otherwise the team's `unauthReplyCreatesNewTicket` decides. Forged bounces change no
delivery status."""

from __future__ import annotations

import dkim
import pytest

from templates_app.addresses import license_address, reply_address
from templates_app.domains import _new_key
from templates_app.inbound.services import inbound_message_receive
from templates_app.models import InboundMessage, OutboundMessage
from tests.mail_helpers import load, simple
from tickets.models import Message, Ticket

REQUESTER = "jana@customer.example"
TRUSTED = "mx.helpdesk.test"


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path
    settings.HELPDESK_TRUSTED_AUTHSERV_IDS = [TRUSTED]


def receive(license, raw, address=None):
    return inbound_message_receive(raw=raw, recipients=[address or license_address(license.pk)])


@pytest.fixture
def conversation(license):
    """A ticket that came by mail from Jana: (ticket, the Message-ID of her first mail)."""
    first = "<first@customer.example>"
    result = receive(
        license, simple(sender=f"Jana <{REQUESTER}>", subject="Broken widget", headers={"Message-ID": first})
    )
    return Ticket.objects.get(pk=result.ticket_id), first


@pytest.fixture
def strict(license):
    """The team's `unauthReplyCreatesNewTicket` on."""
    team = license.default_team
    team.settings = {**team.settings, "unauthReplyCreatesNewTicket": True}
    team.save()
    return team


def texts(ticket) -> list[str]:
    return list(Message.objects.filter(ticket=ticket).order_by("created_at").values_list("text", flat=True))


def _reply(ticket, first, sender=REQUESTER, **headers):
    return simple(
        sender=sender,
        subject=f"Re: [#{ticket.short_id}] {ticket.subject}",
        body="It is still broken.",
        headers={"In-Reply-To": first, **headers},
    )


# --- the spoofs --------------------------------------------------------------------------------------------


def test_mallory_naming_the_requester_in_reply_to_does_not_write_as_her(license, conversation):
    ticket, _ = conversation
    Ticket.objects.filter(pk=ticket.pk).update(status="solved")
    spoof = simple(
        sender="mallory@evil.test",
        subject=f"Re: [#{ticket.short_id}] {ticket.subject}",
        body="Please send the invoice to my new address.",
        headers={"Reply-To": f"Jana <{REQUESTER}>"},
    )
    result = receive(license, spoof)
    assert result.ticket_id != ticket.pk
    assert texts(ticket) == ["Hi there"] and Ticket.objects.get(pk=ticket.pk).status == "solved"


def test_mallory_answering_our_message_id_is_named_on_the_ticket_by_default(license, conversation):
    ticket, first = conversation
    result = receive(license, _reply(ticket, first, sender="mallory@evil.test", **{"Reply-To": REQUESTER}))
    # the team accepts mail from people not on the ticket (the default): added, but never as Jana's own
    assert result.ticket_id == ticket.pk
    assert texts(ticket)[-1].endswith("[Sent by mallory@evil.test, who is not on this ticket.]")


def test_mallory_answering_our_message_id_opens_a_new_ticket_when_the_team_says_so(
    license, conversation, strict
):
    ticket, first = conversation
    result = receive(license, _reply(ticket, first, sender="mallory@evil.test", **{"Reply-To": REQUESTER}))
    assert result.kind == "ticket" and result.ticket_id != ticket.pk and len(texts(ticket)) == 1


def test_a_forged_from_of_the_requester_without_authentication_opens_a_new_ticket(
    license, conversation, strict
):
    ticket, first = conversation
    result = receive(license, _reply(ticket, first))
    assert result.kind == "ticket" and result.ticket_id != ticket.pk and len(texts(ticket)) == 1
    assert "not authenticated" in InboundMessage.objects.get(pk=result.inbound_id).note
    assert list(Ticket.objects.get(pk=result.ticket_id).teams.all()) == [strict]


def test_without_the_team_setting_an_unauthenticated_reply_of_the_requester_threads(license, conversation):
    ticket, first = conversation
    assert receive(license, _reply(ticket, first)).ticket_id == ticket.pk
    assert texts(ticket)[-1] == "It is still broken."


def test_the_signed_reply_address_authenticates(license, conversation, strict):
    ticket, first = conversation
    result = receive(license, _reply(ticket, first), address=reply_address(license.pk, ticket.short_id))
    assert result.kind == "reply" and result.ticket_id == ticket.pk
    assert "signed reply address" in InboundMessage.objects.get(pk=result.inbound_id).note


@pytest.mark.parametrize(
    "results",
    [
        f"{TRUSTED}; dkim=pass (2048-bit key) header.d=customer.example header.s=s1; spf=pass",
        f"{TRUSTED}; spf=fail; dkim=pass header.i=@mail.customer.example",
        f"{TRUSTED} 1; dmarc=pass (p=reject) header.from=customer.example",
    ],
)
def test_a_trusted_mtas_pass_authenticates(license, conversation, strict, results):
    ticket, first = conversation
    result = receive(license, _reply(ticket, first, **{"Authentication-Results": results}))
    assert result.kind == "reply" and result.ticket_id == ticket.pk


@pytest.mark.parametrize(
    "results",
    [
        # an untrusted host's words
        ["evil.test; dkim=pass header.d=customer.example; dmarc=pass header.from=customer.example"],
        # a trusted host's fail
        [f"{TRUSTED}; dkim=fail header.d=customer.example; dmarc=fail header.from=customer.example"],
        # a pass for another domain than the author's
        [f"{TRUSTED}; dkim=pass header.d=evil.test; dmarc=pass header.from=evil.test"],
        # a trusted id's pass below the trusted MTA's own (top-most) header: it came with the mail
        [f"{TRUSTED}; dkim=none", f"{TRUSTED}; dkim=pass header.d=customer.example"],
        # a trusted id's pass below an untrusted header: written before our MTAs saw the mail
        ["relay.evil.test; none", f"{TRUSTED}; dkim=pass header.d=customer.example"],
    ],
)
def test_forged_or_failing_authentication_results_do_not_authenticate(license, conversation, strict, results):
    ticket, first = conversation
    raw = _reply(ticket, first)
    head = b"".join(f"Authentication-Results: {value}\r\n".encode() for value in results)
    result = receive(license, head + raw)
    assert result.kind == "ticket" and result.ticket_id != ticket.pk


# --- our own DKIM check, against a real DNS server -----------------------------------------------------------


@pytest.fixture
def signer(dns_server):
    """customer.example's DKIM key, published at s1._domainkey.customer.example; signs raw mail."""
    private, public = _new_key()
    dns_server.publish("s1._domainkey.customer.example", f"v=DKIM1; k=rsa; p={public}")

    def sign(raw: bytes, domain=b"customer.example") -> bytes:
        return (
            dkim.sign(raw, b"s1", domain, private.encode(), include_headers=[b"from", b"subject", b"to"])
            + raw
        )

    return sign


def test_a_dkim_signature_of_the_authors_domain_that_verifies_authenticates(
    license, conversation, strict, signer
):
    ticket, first = conversation
    result = receive(license, signer(_reply(ticket, first)))
    assert result.kind == "reply" and result.ticket_id == ticket.pk
    assert (
        "dkim signature of customer.example verified" in InboundMessage.objects.get(pk=result.inbound_id).note
    )


def test_a_dkim_signature_that_does_not_verify_does_not_authenticate(license, conversation, strict, signer):
    ticket, first = conversation
    signed = signer(_reply(ticket, first)).replace(b"It is still broken.", b"Pay to IBAN XX00 0000.")
    result = receive(license, signed)
    assert result.kind == "ticket" and result.ticket_id != ticket.pk


def test_a_signature_of_a_domain_without_a_published_key_does_not_authenticate(
    license, conversation, strict, signer, dns_server
):
    ticket, first = conversation
    dns_server.zone.records.clear()
    result = receive(license, signer(_reply(ticket, first)))
    assert result.kind == "ticket" and result.ticket_id != ticket.pk


def test_our_own_dkim_check_can_be_turned_off(license, conversation, strict, signer, settings):
    settings.HELPDESK_INBOUND_DKIM_VERIFY = False
    ticket, first = conversation
    assert receive(license, signer(_reply(ticket, first))).ticket_id != ticket.pk


# --- forged bounces -------------------------------------------------------------------------------------------


@pytest.fixture
def sent(license, conversation):
    ticket, _ = conversation
    message = Message.objects.filter(ticket=ticket).first()
    return OutboundMessage.objects.create(
        license=license, key="reply-1", kind="reply", to=REQUESTER, subject="Re", text="t",
        message_id="sent-1@inbound.helpdesk.localhost", ticket=ticket, ticket_message=message, status="sent",
    )  # fmt: skip


def _dsn(license, original, recipient):
    return load("bounce_dsn.eml", license=license.pk, original=original).replace(
        b"gone@example.com", recipient.encode()
    )


def test_a_bounce_of_a_message_we_sent_to_that_recipient_is_recorded(license, sent):
    result = receive(license, _dsn(license, "<sent-1@inbound.helpdesk.localhost>", REQUESTER))
    sent.refresh_from_db()
    assert result.kind == "bounce" and sent.status == "bounced"


@pytest.mark.parametrize(
    "original, recipient",
    [
        ("<never-sent@inbound.helpdesk.localhost>", REQUESTER),  # not a Message-ID we sent
        ("<sent-1@inbound.helpdesk.localhost>", "boss@customer.example"),  # ours, but to someone else
    ],
)
def test_a_forged_bounce_changes_no_delivery_status(license, sent, original, recipient, monkeypatch):
    from tickets import services as ticket_services

    recorded = []
    monkeypatch.setattr(ticket_services, "message_delivery_record", lambda **kw: recorded.append(kw))
    result = receive(license, _dsn(license, original, recipient))
    sent.refresh_from_db()
    assert result.kind == "bounce" and sent.status == "sent" and recorded == []
    assert not Ticket.objects.exclude(pk=sent.ticket_id).exists()
