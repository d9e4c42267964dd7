"""Mail out: an agent's public reply reaches the requester and the people in the loop through a real SMTP
server, rendered with the team's template, threaded, and exactly once; delivery outcomes are recorded."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from accounts import services as accounts_services
from templates_app import tasks
from templates_app.addresses import inbound_domain, license_address, parse_inbound_address, reply_address
from templates_app.models import OutboundMessage, ReplyAddress
from tests.factories import TemplateFactory, TicketFactory
from tickets import services as ticket_services

TEMPLATE_HTML = (
    '<div class="brand">ACME SUPPORT</div><p>{{message.text}}</p>'
    "<p>{{agent.name}}</p><p>About: {{ticket.subject}} (#{{ticket.shortID}})</p>"
)


@pytest.fixture
def deliveries(monkeypatch):
    """What mail out tells tickets.services.message_delivery_record and message_deliveries_queued."""
    calls = []

    def record(*, message_id, recipient, status, date=None):
        calls.append((str(message_id), recipient, status))

    def queued(*, message, recipients):  # the write's own message, all its recipients at once (issue 34)
        calls.extend((str(message.pk), recipient, "queued") for recipient, _ in recipients)

    monkeypatch.setattr(ticket_services, "message_delivery_record", record)
    monkeypatch.setattr(ticket_services, "message_deliveries_queued", queued)
    return calls


@pytest.fixture
def ticket(license):
    return TicketFactory(
        license=license,
        subject="Where is my order?",
        text="My order 1234 did not arrive.",
        requester={"email": "jane@customer.example", "name": "Jane Doe"},
    )


def _reply(persona, ticket, text="Your order left our warehouse today.", callbacks=None, **extra):
    body = {"message": {"text": text, **extra.pop("message", {})}, **extra}
    with callbacks(execute=True):
        response = persona.client.patch(f"/v1/tickets/{ticket.pk}", body, format="json")
    assert response.status_code == 200, response.content
    return response


def _parts(message):
    return {
        part.get_content_type(): part.get_content().replace("\r\n", "\n")
        for part in message.walk()
        if not part.is_multipart() and part.get_content_disposition() != "attachment"
    }


def _to(sink, address):
    return [m for rcpts, m in sink.messages if address in rcpts]


def test_an_agent_reply_reaches_the_requester_with_threading_headers_and_the_template(
    agent, license, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks, deliveries
):
    # given the ticket's team has an html template, a reply name, and the agent a signature
    team = license.default_team
    template = TemplateFactory(license=license, content={"text": "", "html": TEMPLATE_HTML, "appearance": {}})
    accounts_services.team_update(team=team, template=template, reply_name="Acme Support")
    accounts_services.agent_update(agent=agent.agent, signature_text="Ann\nAcme customer care")
    # when the agent replies through the API
    _reply(agent, ticket, callbacks=django_capture_on_commit_callbacks)
    # then the SMTP server received one mail for the requester
    [(rcpts, received)] = smtp_server.messages
    assert rcpts == ["jane@customer.example"]
    assert received["Subject"] == f"Re: Where is my order? [#{ticket.short_id}]"
    assert received["From"].addresses[0].display_name == "Acme Support"
    assert received["From"].addresses[0].addr_spec == license_address(license.pk)
    # Reply-To is the ticket's signed reply address, which mailin resolves back to this ticket
    [reply_to] = received["Reply-To"].addresses
    assert reply_to.addr_spec == reply_address(license.pk, ticket.short_id)
    assert parse_inbound_address(reply_to.addr_spec).short_id == ticket.short_id
    # our own Message-ID, stored on the outbox row for threading
    message_id = received["Message-ID"]
    assert re.fullmatch(rf"<[0-9a-f]{{32}}@{re.escape(inbound_domain())}>", message_id)
    row = OutboundMessage.objects.get()
    assert f"<{row.message_id}>" == message_id and row.ticket_id == ticket.pk and row.status == "sent"
    # the body is the team's template, with the message, the agent and the signature
    html = _parts(received)["text/html"]
    assert '<div class="brand">ACME SUPPORT</div>' in html
    assert "Your order left our warehouse today." in html and f"(#{ticket.short_id})" in html
    assert "Acme customer care" in html
    text = _parts(received)["text/plain"]
    assert "Your order left our warehouse today." in text and "Ann\nAcme customer care" in text
    # and the delivery was recorded on the message: queued at write, sent after the SMTP server's 250
    assert [(status, recipient) for _, recipient, status in deliveries] == [
        ("queued", "jane@customer.example"),
        ("sent", "jane@customer.example"),
    ]
    assert deliveries[0][0] == str(row.ticket_message_id)


def test_a_second_reply_references_the_first(
    agent, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    _reply(agent, ticket, "First answer.", callbacks=django_capture_on_commit_callbacks)
    _reply(agent, ticket, "Second answer.", callbacks=django_capture_on_commit_callbacks)
    first, second = (m for _, m in smtp_server.messages)
    assert "In-Reply-To" not in first  # nothing of this ticket was mailed to Jane before
    assert second["In-Reply-To"] == first["Message-ID"]
    assert second["References"] == first["Message-ID"]


def test_received_message_ids_are_in_the_references(
    agent, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks, monkeypatch
):
    # given mail received for this ticket (mailin's InboundMessage; its Message-IDs join the thread)
    from templates_app.models import InboundMessage

    InboundMessage.objects.create(
        license=ticket.license, ticket=ticket, message_id="<cafe@customer.example>", kind="ticket",
        created_at=ticket.created_at, raw="inbound/cafe.eml",
    )  # fmt: skip
    _reply(agent, ticket, callbacks=django_capture_on_commit_callbacks)
    [(_, received)] = smtp_server.messages
    assert received["In-Reply-To"] == "<cafe@customer.example>"
    assert received["References"] == "<cafe@customer.example>"


def test_people_in_the_loop_get_it_too_and_private_notes_go_to_nobody(
    agent, license, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    ticket = TicketFactory(
        license=license,
        requester={"email": "jane@customer.example"},
        people_in_the_loop=[
            {"email": "boss@customer.example"},
            {"email": "JANE@customer.example"},  # the requester once only
            {"email": f"{license.pk}@{inbound_domain()}"},  # never our own address
        ],
    )
    _reply(
        agent, ticket, "Internal: check the warehouse.", message={"isPrivate": True},
        callbacks=django_capture_on_commit_callbacks,
    )  # fmt: skip
    assert smtp_server.messages == [] and OutboundMessage.objects.count() == 0
    _reply(agent, ticket, callbacks=django_capture_on_commit_callbacks)
    assert sorted(r for rcpts, _ in smtp_server.messages for r in rcpts) == [
        "boss@customer.example",
        "jane@customer.example",
    ]
    ids = {m["Message-ID"] for _, m in smtp_server.messages}
    assert len(ids) == 2  # one Message-ID per mail


def test_the_thread_and_the_footer_follow_the_license_settings(
    agent, license, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    # given ticketThread and poweredByFooter are on
    license.settings = {**license.settings, "ticketThread": True, "poweredByFooter": True}
    license.save(update_fields=["settings"])
    _reply(agent, ticket, "Second answer.", callbacks=django_capture_on_commit_callbacks)
    [(_, received)] = smtp_server.messages
    parts = _parts(received)
    # the requester's first message is quoted below the answer, and the footer closes the mail
    text = parts["text/plain"]
    assert text.index("Second answer.") < text.index("> My order 1234 did not arrive.")
    assert "Jane Doe wrote:" in text
    assert text.rstrip().endswith("Powered by HelpDesk")
    assert "My order 1234 did not arrive." in parts["text/html"]
    assert "Powered by HelpDesk" in parts["text/html"]


def test_without_the_settings_there_is_no_thread_and_no_footer(
    agent, license, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    license.settings = {**license.settings, "ticketThread": False, "poweredByFooter": False}
    license.save(update_fields=["settings"])
    _reply(agent, ticket, callbacks=django_capture_on_commit_callbacks)
    [(_, received)] = smtp_server.messages
    parts = _parts(received)
    assert "My order 1234" not in parts["text/plain"] and "My order 1234" not in parts["text/html"]
    assert "Powered by HelpDesk" not in parts["text/plain"]


def test_files_are_attached_up_to_the_limit_and_linked_beyond(
    agent, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks, settings
):
    settings.HELPDESK_MAIL_ATTACHMENTS_MAX_BYTES = 1000
    txn_id = agent.client.post("/v1/transactions").json()["ID"]
    files = [
        SimpleUploadedFile("invoice.txt", b"i" * 600, content_type="text/plain"),
        SimpleUploadedFile("photo.bin", b"p" * 600, content_type="application/octet-stream"),
    ]
    response = agent.client.post(f"/v1/transactions/{txn_id}/attachments", {"attachments": files})
    assert response.status_code == 201, response.content
    _reply(agent, ticket, transactionID=txn_id, callbacks=django_capture_on_commit_callbacks)
    [(_, received)] = smtp_server.messages
    attached = [p for p in received.walk() if p.get_content_disposition() == "attachment"]
    assert [(p.get_filename(), p.get_content()) for p in attached] == [("invoice.txt", "i" * 600)]
    text = _parts(received)["text/plain"]
    assert "photo.bin: http" in text and "invoice.txt" not in text


def test_the_admin_reply_is_mailed_too(
    staff_owner, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    from tests.admin_helpers import form_data

    url = f"/admin/tickets/ticket/{ticket.pk}/change/"
    data = form_data(staff_owner.get(url)) | {"reply": "Answered from the admin."}
    data.pop("reply_is_private", None)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_owner.post(url, data)
    assert response.status_code == 302, response.content[:2000]
    [(rcpts, received)] = smtp_server.messages
    assert rcpts == ["jane@customer.example"]
    assert "Answered from the admin." in _parts(received)["text/plain"]


def test_a_rolled_back_reply_sends_nothing(
    agent, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    callbacks = django_capture_on_commit_callbacks(execute=True)
    with callbacks, pytest.raises(RuntimeError), transaction.atomic():
        ticket_services.ticket_update(
            ticket=ticket, author_agent=agent.agent, message={"text": "Never sent."}
        )
        raise RuntimeError("the request failed after the write")
    assert OutboundMessage.objects.count() == 0
    assert smtp_server.messages == []


def test_a_temporary_failure_then_success_sends_once(
    agent, ticket, smtp_server, django_capture_on_commit_callbacks, deliveries
):
    # given the server answers 451 to the first attempt
    smtp_server.refuse = ["451 Greylisted, try again later"]
    with django_capture_on_commit_callbacks(execute=False):
        agent.client.patch(f"/v1/tickets/{ticket.pk}", {"message": {"text": "Hello"}}, format="json")
    row = OutboundMessage.objects.get()
    # when the worker runs the task (a retry runs again at once here instead of after its countdown)
    tasks.send_outbound_message.apply(args=[str(row.pk)], throw=False)
    # and the same task is delivered once more (a redelivered message of the broker)
    tasks.send_outbound_message.apply(args=[str(row.pk)], throw=False)
    # then it was sent exactly once, after one deferral
    assert len(smtp_server.messages) == 1
    row.refresh_from_db()
    assert row.status == "sent" and row.attempts == 2
    assert [status for *_, status in deliveries] == ["queued", "deferred", "sent"]


def test_a_permanent_failure_is_recorded(
    agent, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks, deliveries
):
    smtp_server.refuse = ["550 No such user"]
    _reply(agent, ticket, callbacks=django_capture_on_commit_callbacks)
    row = OutboundMessage.objects.get()
    assert row.status == "failed" and "550" in row.last_error
    assert [status for *_, status in deliveries] == ["queued", "failed"]
    assert smtp_server.messages == []


def test_a_verified_reply_address_is_the_from_and_an_unverified_one_a_reply_to(
    agent, license, ticket, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    address = ReplyAddress.objects.create(license=license, email="support@acme.example", name="Acme")
    accounts_services.team_update(
        team=license.default_team, reply_address_id=address.pk, reply_name="Acme Support"
    )
    # unverified: From stays our inbound address; Reply-To has the customer's address, then the ticket's
    _reply(agent, ticket, "One.", callbacks=django_capture_on_commit_callbacks)
    received = smtp_server.messages[-1][1]
    assert received["From"].addresses[0].addr_spec == license_address(license.pk)
    assert [a.addr_spec for a in received["Reply-To"].addresses] == [
        "support@acme.example",
        reply_address(license.pk, ticket.short_id),
    ]
    # verified: From is the customer's address with the team's reply name
    address.verified_at = address.created_at
    address.save()
    _reply(agent, ticket, "Two.", callbacks=django_capture_on_commit_callbacks)
    received = smtp_server.messages[-1][1]
    assert str(received["From"]) == "Acme Support <support@acme.example>"
    assert [a.addr_spec for a in received["Reply-To"].addresses] == [
        reply_address(license.pk, ticket.short_id)
    ]


@pytest.fixture
def mail_in(settings, tmp_path, license, django_capture_on_commit_callbacks):
    """A mail to the license's address, through the inbound service; returns its ticket."""
    from templates_app.inbound.services import inbound_message_receive
    from tests.mail_helpers import simple
    from tickets.models import Ticket

    settings.MEDIA_ROOT = tmp_path

    def receive(subject="Broken widget", execute=True, headers=None):
        raw = simple(
            sender="New <new@customer.example>",
            subject=subject,
            body="The widget is broken.",
            headers=headers,
        )
        with django_capture_on_commit_callbacks(execute=execute):
            result = inbound_message_receive(raw=raw, recipients=[license_address(license.pk)])
        return Ticket.objects.get(pk=result.ticket_id)

    return receive


def test_a_ticket_that_came_by_mail_is_acknowledged(license, smtp_server, eager_tasks, deliveries, mail_in):
    ticket = mail_in()
    [(rcpts, received)] = smtp_server.messages
    assert rcpts == ["new@customer.example"]
    assert received["Subject"] == f"Re: Broken widget [#{ticket.short_id}]"
    assert received["Auto-Submitted"] == "auto-replied"
    assert f"#{ticket.short_id}" in _parts(received)["text/plain"]
    assert received["Reply-To"].addresses[0].addr_spec == reply_address(license.pk, ticket.short_id)
    assert deliveries == []  # the client's message was not sent by us


def test_no_acknowledgement_when_mailin_says_no(license, smtp_server, eager_tasks, mail_in):
    mail_in(headers={"Auto-Submitted": "auto-replied"})
    assert smtp_server.messages == []
    assert not OutboundMessage.objects.exists()  # decided before anything was queued


def test_a_ticket_made_through_the_api_by_a_client_is_not_acknowledged(
    license, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        TicketFactory(license=license)
    assert smtp_server.messages == []


def test_the_acknowledgement_threads_to_the_received_mail_and_skips_spam(license, smtp_server, mail_in):
    # given two tickets from e-mail whose mails were not sent yet, one of them spam
    good = mail_in(subject="Good", execute=False, headers={"Message-ID": "<in-good@customer.example>"})
    spam = mail_in(subject="Cheap pills", execute=False, headers={"X-Spam-Flag": "YES"})
    # when the worker sends them
    for row in OutboundMessage.objects.all():
        tasks.send_outbound_message.apply(args=[str(row.pk)])
    # then the good one answers the received mail, and nothing was ever queued for the spammer
    [(_, received)] = smtp_server.messages
    assert received["In-Reply-To"] == "<in-good@customer.example>"
    assert OutboundMessage.objects.get().ticket_id == good.pk
    assert not OutboundMessage.objects.filter(ticket=spam).exists()


def test_purging_a_ticket_deletes_its_mail(agent, license, ticket, django_capture_on_commit_callbacks):
    import datetime as dt

    from django.db import connection
    from django.utils import timezone

    from tickets import purge
    from tickets.models import Ticket

    # given a ticket with mail, moved to the trash a month ago
    _reply(agent, ticket, callbacks=django_capture_on_commit_callbacks)
    row = OutboundMessage.objects.get(ticket=ticket)
    old = timezone.now() - dt.timedelta(days=31)
    Ticket.objects.filter(pk=ticket.pk).update(silo="trash", updated_at=old)
    # when the purge runs, the ticket and its mail rows go (the foreign keys hold: checked here, as at commit)
    result = purge.purge_expired()
    connection.check_constraints()
    assert result.counts == {license.pk: {"spam": 0, "trash": 1}}
    assert not OutboundMessage.objects.filter(pk=row.pk).exists()


def test_an_answer_goes_to_at_most_the_limit_of_people_in_the_loop(
    agent, license, settings, django_capture_on_commit_callbacks
):
    # given a ticket with 3,000 people in the loop (written before the inbound limit)
    settings.MAIL_MAX_PEOPLE_IN_THE_LOOP = 50
    ticket = TicketFactory(
        license=license,
        requester={"email": "jane@customer.example"},
        people_in_the_loop=[{"email": f"p{n}@stranger.example"} for n in range(3000)],
    )
    # when an agent answers
    _reply(agent, ticket, callbacks=django_capture_on_commit_callbacks)
    # then the requester and 50 people get it: 51 mails rendered, not 3,001
    recipients = list(OutboundMessage.objects.filter(ticket=ticket).values_list("to", flat=True))
    assert len(recipients) == 51 and recipients.count("jane@customer.example") == 1
