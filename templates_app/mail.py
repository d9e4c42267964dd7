"""Sending e-mail: render now, store one `OutboundMessage` per recipient, send later from a Celery task.

Rows are created inside the caller's transaction and the task is enqueued after commit (`helpdesk.queue`), so
a rolled-back request sends nothing. `deliver()` sends a row once: it takes the row lock, skips a row
already sent, and marks it sent in the same transaction (only a crash between the server's "250" and the
commit could send it again). Temporary SMTP failures (4xx replies, dropped or
refused connections) raise `TemporaryFailure` so the task retries with backoff; permanent ones (5xx) mark
the row failed.
"""

from __future__ import annotations

import logging
import smtplib
from datetime import timedelta
from email import encoders
from email.mime.base import MIMEBase

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db.models import Q
from django.utils import timezone

from accounts.models import License
from helpdesk.queue import enqueue_now, enqueue_on_commit
from helpdesk.transactions import unit_of_work
from templates_app import ticket_delivery
from templates_app.models import OutboundMessage, Template
from templates_app.rendering import Rendered, render

log = logging.getLogger(__name__)

# The task that sends a row, named as Celery names it: tasks.py calls this module, so this module never imports it.
SEND_TASK = "templates_app.tasks.send_outbound_message"


class TemporaryFailure(Exception):
    """The mail server asked us to try again later (or could not be reached)."""


# --- contexts ---------------------------------------------------------------------------------------------


def license_context(*, license, agent=None, **values) -> dict:
    """The flat placeholder context for a license (and the agent writing), plus explicit values."""
    context = {"license.companyName": (license.settings or {}).get("companyName", "")}
    if agent is not None:
        context["agent.name"] = agent.name
        context["agent.signature"] = agent.signature_text
    context.update({key: value for key, value in values.items() if value is not None})
    return context


def sample_context(*, license, agent=None) -> dict:
    """Sample data for previews and test messages (the agent's own name and signature)."""
    return license_context(
        license=license,
        agent=agent,
        **{
            "ticket.subject": "Where is my order?",
            "ticket.shortID": "AB12CD",
            "requester.name": "Jane Doe",
            "requester.email": "jane.doe@example.com",
            "message.text": "Hello Jane,\n\nThank you for your message. Your order left our warehouse today.",
        },
    )


def powered_by(license) -> bool:
    return bool((license.settings or {}).get("poweredByFooter", False))


def logo(template: Template | None):
    """The template's logo: its first attachment (the spec supports only the logo for now)."""
    if template is None:
        return None
    return template.attachments.order_by("created_at").first()


def cid(attachment) -> str:
    return attachment.cid or attachment.token


def render_for_license(*, license, context: dict, template: Template | None = None) -> tuple[Rendered, list]:
    """A system e-mail of a license, made from its default template like every other e-mail.

    Returns the rendered parts and the inline attachments they reference (the logo).
    """
    template = template or license.default_template
    if template is None:
        content, type_ = {"text": "{{message.text}}"}, "visual"
    else:
        content, type_ = template.content, template.type
    image = logo(template)
    rendered = render(
        type=type_,
        content=content,
        context=context,
        powered_by=powered_by(license),
        logo_cid=cid(image) if image else None,
    )
    return rendered, [image] if image else []


# --- queueing and delivery ----------------------------------------------------------------------------------


def message_queue(
    *,
    license,
    kind: str,
    key: str,
    to: str,
    subject: str,
    rendered: Rendered,
    attachments=(),
    fresh: bool = False,
    **threading,
) -> OutboundMessage:
    """Store the message and send it after commit; the same `key` again returns the first row, queued once.

    `fresh`: the key cannot exist yet (it names an object created in this transaction): inserted without the
    look-up. `threading`: the ticket mail's fields (message_id, ticket, ticket_message, from_email, headers).
    """
    subject = " ".join(subject.split())[:300]  # a header: never a line break (company names are user input)
    fields = {"kind": kind, "to": to, "subject": subject, "text": rendered.text, "html": rendered.html}
    if fresh:
        message = OutboundMessage.objects.create(license=license, key=key[:200], **fields, **threading)
        created = True
    else:
        message, created = OutboundMessage.objects.get_or_create(
            license=license, key=key[:200], defaults={**fields, **threading}
        )
    if created:
        if attachments:
            message.attachments.set(attachments)
        enqueue_on_commit(SEND_TASK, str(message.pk))
    return message


def license_mail_queue(
    *, license, kind: str, key: str, to: str, subject: str, body: str, agent=None, **values
) -> OutboundMessage:
    """A system e-mail of a license: `body` is the message text of the license's default template."""
    context = license_context(license=license, agent=agent, **{"message.text": body, **values})
    rendered, attachments = render_for_license(license=license, context=context)
    return message_queue(
        license=license,
        kind=kind,
        key=key,
        to=to,
        subject=subject,
        rendered=rendered,
        attachments=attachments,
    )


def enqueue(*, message_id) -> None:
    """Hand a stored message to the workers. If the broker is down the row stays pending for the sweeper."""
    enqueue_now(SEND_TASK, str(message_id))


def _is_temporary(exc: Exception) -> bool:
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        return bool(codes) and all(400 <= code < 500 for code in codes)
    if isinstance(exc, smtplib.SMTPResponseException):
        return 400 <= exc.smtp_code < 500
    return isinstance(exc, smtplib.SMTPServerDisconnected | ConnectionError | TimeoutError | OSError)


def _one_line(value: str) -> str:
    return " ".join(str(value).split())  # a header value never carries a line break


def _email(message: OutboundMessage) -> EmailMultiAlternatives:
    headers = {"X-HelpDesk-Message-ID": str(message.pk)}
    if message.message_id:
        headers["Message-ID"] = f"<{message.message_id}>"
    for name in ("In-Reply-To", "References", "Auto-Submitted"):
        if message.headers.get(name):
            headers[name] = _one_line(message.headers[name])
    if message.from_email:
        # The header names the team; the envelope sender stays ours (bounces come back to us).
        headers["From"] = _one_line(message.from_email)
    email = EmailMultiAlternatives(
        subject=message.subject,
        body=message.text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[message.to],
        reply_to=[_one_line(address) for address in message.headers.get("Reply-To") or []],
        headers=headers,
        connection=get_connection(fail_silently=False),
    )
    if message.html:
        email.attach_alternative(message.html, "text/html")
    if message.ticket_message_id is not None:
        for attachment in ticket_delivery.split_attachments(message.ticket_message)[0]:
            with attachment.file.open("rb") as handle:
                email.attach(attachment.name, handle.read(), attachment.content_type or None)
    files = bool(email.attachments)
    for attachment in message.attachments.all():
        # Inline parts of the HTML (multipart/related), addressed by Content-ID.
        with attachment.file.open("rb") as handle:
            part = MIMEBase(*(attachment.content_type or "application/octet-stream").split("/", 1))
            part.set_payload(handle.read())
        encoders.encode_base64(part)
        part.add_header("Content-ID", f"<{cid(attachment)}>")
        part.add_header("Content-Disposition", "inline", filename=attachment.name)
        email.attach(part)
        if not files:  # with files attached the parts stay multipart/mixed (clients still resolve cid:)
            email.mixed_subtype = "related"
    return email


def deliver(*, message_id) -> OutboundMessage | None:
    """Send one stored message unless it was sent already; raises TemporaryFailure to ask for a retry.

    The row lock is held while the server answers, so a second worker on the same row waits and then sees
    it sent. (A crash after the server accepted but before the commit can still send twice: at-least-once.)
    """
    with unit_of_work():
        message = OutboundMessage.objects.select_for_update().filter(pk=message_id).first()
        if message is None or message.status != OutboundMessage.STATUS_PENDING:
            return message
        message.attempts += 1
        try:
            _email(message).send()
        except Exception as exc:
            if not isinstance(exc, smtplib.SMTPException | OSError):
                raise
            message.last_error = f"{type(exc).__name__}: {exc}"[:2000]
            temporary = _is_temporary(exc)
            if not temporary:
                message.status = OutboundMessage.STATUS_FAILED
            message.save(update_fields=["attempts", "last_error", "status"])
            ticket_delivery.record(message, "deferred" if temporary else "failed")
            if not temporary:
                log.warning("E-mail %s to %s failed permanently: %s", message.pk, message.to, exc)
                return message
        else:
            message.status = OutboundMessage.STATUS_SENT
            message.sent_at = timezone.now()
            message.save(update_fields=["attempts", "status", "sent_at", "last_error", "headers"])
            ticket_delivery.record(message, "sent", date=message.sent_at)
            return message
    # A temporary failure: the attempt is committed, then the task retries.
    raise TemporaryFailure(message.last_error)


@unit_of_work
def give_up(*, message_id) -> None:
    """After the last retry: the message stays unsent and says why."""
    message = (
        OutboundMessage.objects.select_for_update()
        .filter(pk=message_id, status=OutboundMessage.STATUS_PENDING)
        .first()
    )
    if message is not None:
        message.status = OutboundMessage.STATUS_FAILED
        message.save(update_fields=["status"])
        ticket_delivery.record(message, "failed")


STALE_AFTER = timedelta(minutes=10)
RETENTION = timedelta(days=30)


def requeue_stale_messages() -> int:
    """Enqueue again what was never tried (its enqueue was lost); drop finished messages after RETENTION.

    Safe to overlap with a running task: `deliver()` sends a row at most once. Works license by license.
    """
    now, requeued = timezone.now(), 0
    for license_id in License.objects.values_list("pk", flat=True).iterator():
        messages = OutboundMessage.objects.for_license(license_id)
        cutoff = now - RETENTION
        messages.filter(
            Q(status=OutboundMessage.STATUS_SENT, sent_at__lt=cutoff)
            | Q(
                status__in=[OutboundMessage.STATUS_FAILED, OutboundMessage.STATUS_SUPPRESSED],
                created_at__lt=cutoff,
            )
        ).delete()
        stale = messages.filter(
            status=OutboundMessage.STATUS_PENDING, attempts=0, created_at__lt=now - STALE_AFTER
        ).values_list("pk", flat=True)
        for message_id in list(stale):
            enqueue(message_id=message_id)
            requeued += 1
    return requeued
