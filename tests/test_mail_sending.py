"""Sending: a test message reaches a real SMTP server on loopback; retries on 4xx; never twice."""

import smtplib

import pytest

from templates_app import mail, tasks
from templates_app.models import OutboundMessage
from templates_app.rendering import Rendered

CONTENT = {
    "text": "Hello {{requester.name}}, about {{ticket.subject}}",
    "html": '<p>Hello <b>{{requester.name}}</b></p><img src="https://evil.example/p.png">',
    "appearance": {},
}


def _parts(message):
    return {part.get_content_type(): part.get_content() for part in message.walk() if not part.is_multipart()}


def test_a_test_message_reaches_a_real_smtp_server_with_text_and_html(
    owner, smtp_server, eager_tasks, django_capture_on_commit_callbacks
):
    # when the owner sends a test message, and the transaction commits
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(
            "/v1/templates/sendTestMessage",
            {"content": CONTENT, "type": "html", "recipients": ["one@example.com", "two@example.com"]},
            format="json",
        )
    assert response.status_code == 202
    # then the SMTP server received one message per recipient, with the rendered text and HTML parts
    assert sorted(rcpt for rcpts, _ in smtp_server.messages for rcpt in rcpts) == [
        "one@example.com",
        "two@example.com",
    ]
    _, received = smtp_server.messages[0]
    assert received["Subject"] == "Test message from Acme"
    assert received.get_content_type() == "multipart/alternative"
    parts = _parts(received)
    assert parts["text/plain"].startswith("Hello Jane Doe, about Where is my order?")
    assert "<p>Hello <b>Jane Doe</b></p>" in parts["text/html"]
    assert "evil.example" not in parts["text/html"]
    # and the rows are marked sent
    assert set(OutboundMessage.objects.values_list("status", flat=True)) == {"sent"}


def _message(license, key="k"):
    return OutboundMessage.objects.create(
        license=license, key=key, kind="test", to="x@example.com", subject="S", text="T", html="<p>T</p>"
    )


def test_a_message_is_never_sent_twice(license, smtp_server):
    # given a message delivered once
    message = _message(license)
    mail.deliver(message_id=message.pk)
    # when the task runs again (a redelivered task, a retried request)
    mail.deliver(message_id=message.pk)
    tasks.send_outbound_message(str(message.pk))
    # then the server saw it once
    assert len(smtp_server.messages) == 1
    message.refresh_from_db()
    assert message.status == "sent" and message.attempts == 1 and message.sent_at is not None


def test_queueing_the_same_key_twice_keeps_one_message(license):
    rendered = Rendered(text="t", html="h")
    first = mail.message_queue(
        license=license, kind="test", key="same", to="a@example.com", subject="s", rendered=rendered
    )
    again = mail.message_queue(
        license=license, kind="test", key="same", to="a@example.com", subject="s", rendered=rendered
    )
    assert first.pk == again.pk
    assert OutboundMessage.objects.count() == 1


def test_a_temporary_smtp_failure_is_retried(license, smtp_server):
    # given a server that answers 450 (try later) to the first attempt
    smtp_server.refuse = ["450 Mailbox busy, try later"]
    message = _message(license)
    # when the task runs (in the caller's thread; a retry runs again at once instead of after the countdown)
    result = tasks.send_outbound_message.apply(args=[str(message.pk)], throw=False)
    # then it retried and the second attempt went through
    message.refresh_from_db()
    assert message.status == "sent" and message.attempts == 2
    assert "450" in message.last_error
    assert len(smtp_server.messages) == 1
    assert result.successful()


def test_a_permanent_smtp_failure_is_not_retried(license, smtp_server, eager_tasks):
    smtp_server.refuse = ["550 No such user"]
    message = _message(license)
    tasks.send_outbound_message.delay(str(message.pk))
    message.refresh_from_db()
    assert message.status == "failed" and message.attempts == 1
    assert "550" in message.last_error
    assert smtp_server.messages == []


def test_an_unreachable_server_is_a_temporary_failure(license, settings):
    # given nothing listens on the configured port
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 9  # discard port, closed
    message = _message(license)
    # when it is delivered, a retry is asked for and the row stays pending
    with pytest.raises(mail.TemporaryFailure):
        mail.deliver(message_id=message.pk)
    message.refresh_from_db()
    assert message.status == "pending" and message.attempts == 1


def test_the_task_gives_up_after_its_retries(license, monkeypatch):
    message = _message(license)

    def always_busy(*, message_id):
        raise mail.TemporaryFailure("421 busy")

    monkeypatch.setattr(mail, "deliver", always_busy)
    tasks.send_outbound_message.apply(args=[str(message.pk)], retries=tasks.MAX_RETRIES)
    message.refresh_from_db()
    assert message.status == "failed"


@pytest.mark.parametrize(
    ("exc", "temporary"),
    [
        (smtplib.SMTPResponseException(421, b"busy"), True),
        (smtplib.SMTPResponseException(554, b"rejected"), False),
        (smtplib.SMTPRecipientsRefused({"a@x": (450, b"later")}), True),
        (smtplib.SMTPRecipientsRefused({"a@x": (550, b"unknown")}), False),
        (smtplib.SMTPServerDisconnected("gone"), True),
        (ConnectionRefusedError(), True),
        (TimeoutError(), True),
    ],
)
def test_temporary_failures_are_told_from_permanent_ones(exc, temporary):
    assert mail._is_temporary(exc) is temporary


def test_backoff_grows_and_is_capped():
    assert [tasks.backoff(n) for n in range(9)] == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]


def test_a_line_break_in_a_subject_cannot_add_headers(license):
    rendered = Rendered(text="t", html="")
    message = mail.message_queue(
        license=license,
        kind="test",
        key="s",
        to="a@example.com",
        subject="Hi\r\nBcc: x@evil.example",
        rendered=rendered,
    )
    assert message.subject == "Hi Bcc: x@evil.example"


def test_a_lost_enqueue_does_not_fail_the_request(owner, monkeypatch, django_capture_on_commit_callbacks):
    # given a broker that is down
    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.send_outbound_message, "apply_async", broker_down)
    # when a test message is sent
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.client.post(
            "/v1/templates/sendTestMessage",
            {"content": CONTENT, "recipients": ["a@example.com"]},
            format="json",
        )
    # then the request succeeded and the message waits for the sweeper
    assert response.status_code == 202
    assert OutboundMessage.objects.get().status == "pending"


def test_the_sweeper_requeues_stale_messages_and_drops_old_finished_ones(license, time_machine, eager_tasks):
    import datetime as dt

    # given a message whose enqueue was lost and an old sent message
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), tick=False)
    lost = _message(license, key="lost")
    old = _message(license, key="old")
    old.status, old.sent_at = "sent", dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    old.save()
    # when the sweeper runs 31 days later
    time_machine.move_to(dt.datetime(2026, 2, 1, 12, tzinfo=dt.UTC), tick=False)
    fresh = _message(license, key="fresh")
    requeued = tasks.requeue_stale_messages()
    # then the lost one went out, the fresh one is left to its own task, the old one is gone
    assert requeued == 1
    lost.refresh_from_db()
    assert lost.status == "sent"
    assert OutboundMessage.objects.get(pk=fresh.pk).status == "pending"
    assert not OutboundMessage.objects.filter(pk=old.pk).exists()


def test_delivering_a_deleted_message_does_nothing(db):
    import uuid

    assert mail.deliver(message_id=uuid.uuid4()) is None


def test_the_template_logo_travels_inline_with_the_email(
    owner, smtp_server, settings, tmp_path, eager_tasks, django_capture_on_commit_callbacks
):
    from django.core.files.base import ContentFile

    from accounts.models import Attachment, AttachmentTransaction

    # given the default template has a logo
    settings.MEDIA_ROOT = tmp_path
    license = owner.license
    upload = AttachmentTransaction.objects.create(license=license)
    logo = Attachment(
        license=license, transaction=upload, name="logo.png", content_type="image/png", size=8,
        sha256="0" * 64, token="logo-token", cid="logo",
    )  # fmt: skip
    logo.file.save("logo.png", ContentFile(b"\x89PNG\r\n\x1a\n"), save=False)
    logo.save()
    license.default_template.attachments.add(logo)
    # when a system e-mail of the license is sent
    with django_capture_on_commit_callbacks(execute=True):
        owner.client.post(
            f"/v1/licenses/{license.pk}/forwardingInstructions", {"email": "it@example.com"}, format="json"
        )
    # then the HTML shows the logo by Content-ID and the image travels as an inline part
    [(_, received)] = smtp_server.messages
    assert received.get_content_type() == "multipart/related"
    parts = {part.get_content_type(): part for part in received.walk() if not part.is_multipart()}
    assert '<img src="cid:logo"' in parts["text/html"].get_content()
    image = parts["image/png"]
    assert image["Content-ID"] == "<logo>"
    assert image.get_content() == b"\x89PNG\r\n\x1a\n"


@pytest.mark.django_db(transaction=True)  # the outcome is written in a transaction of its own, as in a worker
def test_a_lost_outcome_write_never_sends_again(license, smtp_server, monkeypatch):
    from django.db import OperationalError

    from templates_app import ticket_delivery

    # given the relay accepts the mail, and the first write of the outcome meets a locked database
    message = _message(license)
    real_record, calls = ticket_delivery.record, []

    def locked_once(row, status, date=None):
        calls.append(status)
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return real_record(row, status, date=date)

    monkeypatch.setattr(ticket_delivery, "record", locked_once)
    monkeypatch.setattr(mail.time, "sleep", lambda seconds: None)
    mail.deliver(message_id=message.pk)
    # when the task runs again and the sweeper looks
    mail.deliver(message_id=message.pk)
    mail.sweep()
    # then the outcome was written on its second try and the relay saw the mail once
    message.refresh_from_db()
    assert calls == ["sent", "sent"]
    assert message.status == "sent" and message.attempts == 1
    assert len(smtp_server.messages) == 1


def test_a_claimed_message_is_sent_again_only_after_its_claim_expires(license, smtp_server, time_machine):
    import datetime as dt

    # given a worker claimed a message and died before recording the relay's answer
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), tick=False)
    message = _message(license)
    assert mail._claim(message.pk) is not None
    # when the task is delivered again and the sweeper runs within the claim
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, 1, tzinfo=dt.UTC), tick=False)
    mail.deliver(message_id=message.pk)
    assert mail.sweep() == 0
    assert smtp_server.messages == []
    # then after the claim expired, the sweeper sends it (once)
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, 3, tzinfo=dt.UTC), tick=False)
    mail.deliver(message_id=message.pk)
    mail.deliver(message_id=message.pk)
    message.refresh_from_db()
    assert message.status == "sent" and message.attempts == 2
    assert len(smtp_server.messages) == 1


def test_a_deferred_message_whose_retry_met_a_database_error_is_swept_until_sent(
    license, smtp_server, time_machine, eager_tasks, monkeypatch
):
    import datetime as dt

    from django.db import OperationalError

    # given the relay answered 451 to the first attempt
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), tick=False)
    smtp_server.refuse = ["451 Try again later"]
    message = _message(license)
    with pytest.raises(mail.TemporaryFailure):
        mail.deliver(message_id=message.pk)
    # and its retry ran while the database was away (the task failed, the row stayed pending, attempts=1)
    real_claim = mail._claim
    monkeypatch.setattr(mail, "_claim", lambda message_id: (_ for _ in ()).throw(OperationalError("down")))
    with pytest.raises(OperationalError):
        tasks.send_outbound_message.apply(args=[str(message.pk)], retries=1, throw=True)
    monkeypatch.setattr(mail, "_claim", real_claim)
    message.refresh_from_db()
    assert message.status == "pending" and message.attempts == 1
    # when the database is back and the sweeper runs after the retry was due
    time_machine.move_to(dt.datetime(2026, 1, 1, 12, 2, tzinfo=dt.UTC), tick=False)
    assert tasks.sweep_outbound_messages() == 1
    # then the mail went out
    message.refresh_from_db()
    assert message.status == "sent" and message.attempts == 2
    assert len(smtp_server.messages) == 1


def test_a_message_that_keeps_crashing_the_sender_fails_after_its_attempts(license, monkeypatch):
    # given a message whose e-mail cannot even be built (a bug, not the relay)
    message = _message(license)

    def broken(row):
        raise ValueError("cannot build")

    monkeypatch.setattr(mail, "_email", broken)
    # when the task and the sweeper try it again and again
    for _ in range(mail.MAX_ATTEMPTS):
        with pytest.raises(ValueError):
            mail.deliver(message_id=message.pk)
        message.refresh_from_db()
    # then it is given up (not swept forever), and says why
    assert message.status == "failed" and message.attempts == mail.MAX_ATTEMPTS
    assert "cannot build" in message.last_error
