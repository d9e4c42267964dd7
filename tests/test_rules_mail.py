"""A rule's public message goes through mail out (the template, threaded to the customer's mail) and never
answers an automatic mail (an auto-reply, a null return path, past the storm limits): received through the inbound
service, such a message is marked, and the rule leaves its public message out (its `rule` event says why)."""

from __future__ import annotations

import pytest

from templates_app.addresses import license_address
from templates_app.inbound.services import inbound_message_receive
from templates_app.models import OutboundMessage
from tests.mail_helpers import load, simple
from tickets.models import Message, Ticket, TicketEvent
from tickets.rules import services
from tickets.rules.models import Rule

pytestmark = pytest.mark.django_db

CLIENT_MESSAGE = {"type": "event", "op": "is", "value": "clientMessage"}
ANSWER = {"type": "sendMessage", "value": {"text": "We got it, #{{ticket.shortID}}."}}


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path)


def _receive(license, raw):
    return inbound_message_receive(raw=raw, recipients=[license_address(license.pk)])


def _rule(license, actions):
    return services.rule_create(license=license, name="Answer", triggers=[CLIENT_MESSAGE], actions=actions)


def _answers(ticket_id):
    # the rule's message (the worker renders its mail: the row's text is empty until then)
    rows = OutboundMessage.objects.filter(ticket_id=ticket_id, ticket_message__text__startswith="We got it")
    return list(rows)


def _rule_event(ticket_id):
    return TicketEvent.objects.filter(ticket_id=ticket_id, type="rule").order_by("created_at").last().payload


def test_a_rules_message_answers_a_customers_mail_threaded_through_mail_out(license):
    _rule(license, [ANSWER])
    result = _receive(license, simple(subject="Printer", headers={"Message-ID": "<p1@client.example>"}))
    [sent] = _answers(result.ticket_id)
    assert sent.kind == OutboundMessage.KIND_REPLY and sent.to == "client@example.com"
    assert "p1@client.example" in sent.headers["References"]  # threaded (In-Reply-To: the acknowledgement)
    assert "messageSkipped" not in _rule_event(result.ticket_id)


def test_a_rule_never_answers_an_auto_reply_but_does_the_rest(license):
    # given a rule that answers and raises the priority
    rule = _rule(license, [ANSWER, {"type": "setPriority", "value": 20}])
    # when an out-of-office mail comes in
    result = _receive(license, load("auto_reply.eml"))
    # then its message is marked, nothing answers it, the rest of the rule applied and its event says why
    message = Message.objects.get(ticket_id=result.ticket_id)
    assert message.no_auto_reply == "no auto-reply: Auto-Submitted: auto-replied"
    assert _answers(result.ticket_id) == []
    assert Ticket.objects.get(pk=result.ticket_id).priority == 20
    event = _rule_event(result.ticket_id)
    assert "A rule never answers an automatic message" in event["messageSkipped"]
    assert "Auto-Submitted: auto-replied" in event["messageSkipped"]
    assert Rule.objects.get(pk=rule.pk).use_counter == 1


def test_an_auto_reply_to_a_ticket_is_not_answered_but_a_private_note_is_written(license):
    # given a customer's ticket, then rules that answer or note every client message
    first = _receive(license, simple(subject="Invoice", headers={"Message-ID": "<i1@client.example>"}))
    short_id = Ticket.objects.get(pk=first.ticket_id).short_id
    answer = _rule(license, [ANSWER])
    note = services.rule_create(
        license=license,
        name="Note",
        triggers=[CLIENT_MESSAGE],
        actions=[{"type": "sendMessage", "value": {"text": "Auto-reply noted.", "isPrivate": True}}],
        ordering=1,
    )
    # when the customer's out-of-office answers on the ticket (a null return path too)
    raw = simple(
        subject=f"Automatic reply: [#{short_id}] Invoice",
        headers={"In-Reply-To": "<i1@client.example>", "Return-Path": "<>"},
    )
    result = _receive(license, raw)
    assert result.kind == "reply" and result.ticket_id == first.ticket_id
    # then the answering rule is skipped, saying why; the private note is written
    assert _answers(first.ticket_id) == []
    events = [e.payload for e in TicketEvent.objects.filter(ticket_id=first.ticket_id, type="rule")]
    [skipped] = [e for e in events if e["ruleID"] == str(answer.pk)]
    assert "null return path" in skipped["skipped"]
    assert [e for e in events if e["ruleID"] == str(note.pk)] and "skipped" not in events[-1]
    assert Message.objects.filter(
        ticket_id=first.ticket_id, text="Auto-reply noted.", is_private=True
    ).exists()
    assert Rule.objects.get(pk=answer.pk).use_counter == 0


def test_past_the_storm_limit_a_rule_does_not_answer_either(license, settings):
    settings.INBOUND_AUTO_REPLIES_PER_HOUR = 1
    _rule(license, [ANSWER])
    first = _receive(license, simple(subject="One"))
    second = _receive(license, simple(subject="Two"))
    assert len(_answers(first.ticket_id)) == 1
    assert _answers(second.ticket_id) == []
    assert "more than 1 to client@example.com" in _rule_event(second.ticket_id)["skipped"]
