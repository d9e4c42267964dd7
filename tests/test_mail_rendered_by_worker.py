"""A ticket's mail is rendered by the worker that sends it, not in the request (issue 34): the request stores
what to render from in the outbox row; the worker renders the same mail the request used to render, stores it
before its first send, and every guarantee of the outbox holds (once, nothing lost, retries)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.files.base import ContentFile

from accounts import services as accounts_services
from accounts.models import Attachment, AttachmentTransaction
from templates_app import mail, ticket_mail
from templates_app.addresses import license_address
from templates_app.inbound.services import inbound_message_receive
from templates_app.models import OutboundMessage
from tests.factories import TemplateFactory, TicketFactory
from tests.mail_helpers import simple
from tickets.models import Message, Ticket

TEMPLATE = {
    "text": "Hi {{requester.name}},\n{{message.text}}\n-- {{agent.name}} about {{ticket.subject}} #{{ticket.shortID}}",
    "html": '<div class="brand">ACME</div><p>{{message.text}}</p><p>{{agent.name}}</p><p>{{ticket.subject}}</p>',
    "appearance": {},
}


@pytest.fixture
def branded(license, agent, settings, tmp_path):
    """The ticket's team has a template with a logo and a reply name, the agent a signature, threads on."""
    settings.MEDIA_ROOT = tmp_path
    upload = AttachmentTransaction.objects.create(license=license)
    logo = Attachment(
        license=license, transaction=upload, name="logo.png", content_type="image/png", size=8,
        sha256="0" * 64, token="logo-token", cid="logo",
    )  # fmt: skip
    logo.file.save("logo.png", ContentFile(b"\x89PNG\r\n\x1a\n"), save=False)
    logo.save()
    template = TemplateFactory(license=license, content=TEMPLATE)
    template.attachments.add(logo)
    accounts_services.team_update(team=license.default_team, template=template, reply_name="Acme Support")
    accounts_services.agent_update(agent=agent.agent, signature_text="Ann\nAcme customer care")
    license.settings = {**(license.settings or {}), "ticketThread": True, "companyName": "Acme"}
    license.save(update_fields=["settings"])
    return template


def _request_time_rendering(row: OutboundMessage, *, body: str, first: bool) -> dict:
    """What the request rendered before issue 34 (templates_app.ticket_mail._queue on main at a5e9ed8), for
    the same ticket, message and team: the one renderer with the team's template, and `sender`."""
    ticket = Ticket.objects.get(pk=row.ticket_id)
    message = Message.objects.get(pk=row.ticket_message_id)
    team = ticket_mail.ticket_team(ticket)
    acknowledgement = row.kind == OutboundMessage.KIND_ACKNOWLEDGEMENT
    rendered, inline = ticket_mail.render_ticket_mail(
        ticket=ticket, team=team, message=message, body=body, first=first, files=not acknowledgement
    )
    from_email, reply_to = ticket_mail.sender(license=ticket.license, team=team, short_id=ticket.short_id)
    return {
        "text": rendered.text,
        "html": rendered.html,
        "from": from_email,
        "reply_to": reply_to,
        "inline": [a.pk for a in inline],
    }


def _sent_as_rendered(row: OutboundMessage, smtp_server, expected: dict) -> None:
    assert row.text == "" and row.html == "" and row.to_render is not None  # nothing rendered in the request
    mail.deliver(message_id=row.pk)
    row.refresh_from_db()
    assert row.status == OutboundMessage.STATUS_SENT and row.to_render is None
    assert (row.text, row.html) == (expected["text"], expected["html"])
    assert row.from_email == expected["from"] and row.headers["Reply-To"] == expected["reply_to"]
    assert [a.pk for a in row.attachments.all()] == expected["inline"]
    [received] = [m for _, m in smtp_server.messages if m["Message-ID"] == f"<{row.message_id}>"]
    assert received["From"] == expected["from"]
    assert received["Reply-To"] == ", ".join(expected["reply_to"])
    parts = {p.get_content_type(): p.get_content() for p in received.walk() if not p.is_multipart()}
    for kind in ("text/plain", "text/html"):
        parts[kind] = parts[kind].replace("\r\n", "\n")
    assert parts["text/plain"].rstrip("\n") == expected["text"].rstrip("\n")
    assert parts["text/html"].rstrip("\n") == expected["html"].rstrip("\n")
    assert parts["image/png"] == b"\x89PNG\r\n\x1a\n"


def test_an_agent_reply_is_the_mail_the_request_rendered(agent, license, branded, smtp_server):
    # given a ticket with an earlier answer (a thread to quote, a Message-ID to reference)
    ticket = TicketFactory(
        license=license, subject="Where is my order?", requester={"email": "jane@c.example"}
    )
    response = agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "First."}}, format="json")
    first = OutboundMessage.objects.get(ticket_message__text="First.")
    mail.deliver(message_id=first.pk)
    # when the agent replies
    response = agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Second."}}, format="json")
    assert response.status_code == 200
    # then the row carries the decisions of the request (Message-ID, threading) and the worker renders the rest
    row = OutboundMessage.objects.get(ticket_message__text="Second.")
    assert row.subject == f"Re: Where is my order? [#{ticket.short_id}]"
    assert row.headers["In-Reply-To"] == f"<{first.message_id}>"
    expected = _request_time_rendering(row, body="Second.", first=False)
    assert "First." in expected["text"] and "Ann\nAcme customer care" in expected["text"]  # thread, signature
    _sent_as_rendered(row, smtp_server, expected)


def test_a_ticket_created_by_an_agent_is_the_mail_the_request_rendered(owner, license, branded, smtp_server):
    # when an agent opens a ticket for a customer
    body = {
        "subject": "Your refund",
        "requester": {"email": "bo@c.example", "name": "Bo"},
        "message": {"text": "Done."},
    }
    response = owner.client.post("/v1/tickets", body, format="json")
    assert response.status_code == 201
    # then its mail is the one the request used to render (first message: no thread, not a "Re:")
    row = OutboundMessage.objects.get(ticket_id=response.json()["ID"])
    assert row.subject == f"Your refund [#{response.json()['shortID']}]" and "In-Reply-To" not in row.headers
    _sent_as_rendered(row, smtp_server, _request_time_rendering(row, body="Done.", first=True))


def test_an_acknowledgement_is_the_mail_the_request_rendered(license, branded, smtp_server):
    # when a customer writes in
    result = inbound_message_receive(
        raw=simple(subject="Printer", headers={"Message-ID": "<p1@client.example>"}),
        recipients=[license_address(license.pk)],
    )
    # then the acknowledgement is threaded to it at once and rendered by the worker as the request did
    row = OutboundMessage.objects.get(ticket_id=result.ticket_id, kind=OutboundMessage.KIND_ACKNOWLEDGEMENT)
    assert (
        row.headers["In-Reply-To"] == "<p1@client.example>"
        and row.headers["Auto-Submitted"] == "auto-replied"
    )
    ticket = Ticket.objects.get(pk=result.ticket_id)
    body = (
        "Thank you for your message. We received your request and Acme will answer soon.\n\n"
        f"Your ticket number is #{ticket.short_id}; keep it in the subject when you write about it."
    )
    _sent_as_rendered(row, smtp_server, _request_time_rendering(row, body=body, first=True))


def test_the_mail_shows_the_ticket_as_it_was_when_written(agent, license, branded, smtp_server):
    # given a reply queued, and the ticket renamed before the worker renders its mail
    ticket = TicketFactory(license=license, subject="Old subject", requester={"email": "jane@c.example"})
    agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Answer."}}, format="json")
    agent.client.patch(f"/v1/tickets/{ticket.pk}", {"subject": "New subject"}, format="json")
    # when the worker sends it
    row = OutboundMessage.objects.get(ticket_message__text="Answer.")
    mail.deliver(message_id=row.pk)
    # then the mail says what the request would have said
    row.refresh_from_db()
    assert "Old subject" in row.text and "New subject" not in row.text
    assert row.subject == f"Re: Old subject [#{ticket.short_id}]"


def test_the_request_renders_nothing(agent, license, branded, monkeypatch):
    # given rendering is broken
    def broken(**kwargs):
        raise AssertionError("rendered in the request")

    monkeypatch.setattr(ticket_mail, "render", broken)
    ticket = TicketFactory(license=license, requester={"email": "jane@c.example"})
    # when the agent replies, the request succeeds and queues the row (its delivery status says queued)
    response = agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Hi."}}, format="json")
    assert response.status_code == 200
    event = [e for e in response.json()["events"] if e["type"] == "message"][-1]
    assert [d["status"] for d in event["deliveryStatus"]] == ["queued"]
    assert OutboundMessage.objects.get(ticket_message__text="Hi.").status == OutboundMessage.STATUS_PENDING


def test_a_worker_killed_after_rendering_sends_what_it_rendered_once(
    agent, license, branded, smtp_server, time_machine
):
    # given a reply whose worker claimed it, rendered it and died before the relay was contacted
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), tick=False)
    ticket = TicketFactory(license=license, requester={"email": "jane@c.example"})
    agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Rendered once."}}, format="json")
    row = OutboundMessage.objects.get(ticket_message__text="Rendered once.")
    claimed = mail._claim(row.pk)
    mail._render(claimed)
    rendered = OutboundMessage.objects.get(pk=row.pk).html
    # and the template changed since
    branded.content = {**TEMPLATE, "html": "<p>Another brand {{message.text}}</p>"}
    branded.save()
    # when the task comes again within the claim, nothing is sent
    mail.deliver(message_id=row.pk)
    assert smtp_server.messages == []
    # then after the claim expired the sweeper's task sends the stored rendering, once
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, 3, tzinfo=dt.UTC), tick=False)
    mail.deliver(message_id=row.pk)
    mail.deliver(message_id=row.pk)
    row.refresh_from_db()
    assert row.status == OutboundMessage.STATUS_SENT and row.attempts == 2 and row.html == rendered
    [(_, received)] = smtp_server.messages
    assert "Another brand" not in received.as_string() and "ACME" in received.as_string()


def test_a_worker_killed_between_the_row_and_the_send_loses_nothing(
    agent, license, branded, smtp_server, time_machine, eager_tasks
):
    # given a reply committed whose task was lost (the worker died, or the broker was away)
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), tick=False)
    ticket = TicketFactory(license=license, requester={"email": "jane@c.example"})
    agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Not lost."}}, format="json")
    # when the sweeper runs, and the lost task turns up after all
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, 1, tzinfo=dt.UTC), tick=False)
    assert mail.sweep() == 1
    row = OutboundMessage.objects.get(ticket_message__text="Not lost.")
    mail.deliver(message_id=row.pk)
    # then the mail went out rendered, once
    row.refresh_from_db()
    assert row.status == OutboundMessage.STATUS_SENT and row.to_render is None and "Not lost." in row.text
    assert len(smtp_server.messages) == 1


def test_a_mail_that_cannot_be_rendered_is_retried_then_fails(agent, license, monkeypatch):
    # given rendering a reply raises (a bug)
    ticket = TicketFactory(license=license, requester={"email": "jane@c.example"})
    agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Broken."}}, format="json")
    row = OutboundMessage.objects.get(ticket_message__text="Broken.")

    def broken(row):
        raise ValueError("cannot render")

    monkeypatch.setitem(mail.RENDERERS, OutboundMessage.KIND_REPLY, broken)
    # when the task and the sweeper try it again and again
    for _ in range(mail.MAX_ATTEMPTS):
        with pytest.raises(ValueError):
            mail.deliver(message_id=row.pk)
    # then it is given up, says why, and was never half-rendered
    row.refresh_from_db()
    assert row.status == OutboundMessage.STATUS_FAILED and row.attempts == mail.MAX_ATTEMPTS
    assert "cannot render" in row.last_error and row.to_render is not None


def test_a_rating_request_is_the_mail_the_request_rendered(agent, license, branded, smtp_server):
    # given a ticket with an earlier answer (a Message-ID to reference)
    ticket = TicketFactory(
        license=license, subject="Broken", requester={"email": "jo@c.example", "name": "Jo"}
    )
    agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Fixed."}}, format="json")
    first = OutboundMessage.objects.get(ticket_message__text="Fixed.")
    # when the agent solves it
    response = agent.client.patch(f"/v1/tickets/{ticket.pk}", {"status": "solved"}, format="json")
    assert response.status_code == 200
    # then the request decided the row's thread and body (its signed links), the worker renders the rest as the
    # request did before (templates_app.rating.on_rating_requested on main at 47a6974)
    row = OutboundMessage.objects.get(kind="rating")
    assert row.headers["In-Reply-To"] == f"<{first.message_id}>"
    assert row.headers["Auto-Submitted"] == "auto-generated"
    assert row.subject == f"How did we do? Re: Broken [#{ticket.short_id}]"
    body = row.to_render["body"]
    assert "Good: http" in body and "How did Acme do?" in body
    ticket = Ticket.objects.get(pk=ticket.pk)
    team = ticket_mail.ticket_team(ticket)
    context = mail.license_context(
        license=ticket.license,
        **{
            "ticket.subject": ticket.subject,
            "ticket.shortID": ticket.short_id,
            "requester.name": ticket.requester_name,
            "requester.email": ticket.requester_email,
            "message.text": body,
        },
    )
    template = team.template if team is not None and team.template_id else None
    rendered, inline = mail.render_for_license(license=ticket.license, context=context, template=template)
    from_email, reply_to = ticket_mail.sender(license=ticket.license, team=team, short_id=ticket.short_id)
    expected = {
        "text": rendered.text,
        "html": rendered.html,
        "from": from_email,
        "reply_to": reply_to,
        "inline": [a.pk for a in inline],
    }
    assert "Hi Jo," in expected["text"]
    _sent_as_rendered(row, smtp_server, expected)
