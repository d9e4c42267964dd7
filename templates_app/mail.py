"""Sending e-mail: render now, store one `OutboundMessage` per recipient, send later from a Celery task. A
ticket's mail is rendered later, by the worker before the row's first send (`RENDERERS`, `to_render`).

Rows are created inside the caller's transaction and the task is enqueued after commit (`helpdesk.queue`), so
a rolled-back request sends nothing. `deliver()` claims a row (status `sending`, committed), sends it with no
transaction open, and records the outcome; a row already sent or being sent is skipped, so a task delivered
twice sends once. Temporary SMTP failures (4xx replies, dropped or refused connections) raise
`TemporaryFailure` so the task retries with backoff (the row says when: `next_attempt_at`); permanent ones
(5xx) mark the row failed. The sweeper (beat, every 30 s) enqueues every row nobody is working on, until it is
sent or given up. Only a worker killed between the relay's 250 and the outcome's commit sends a mail twice
(after its claim expires): at-least-once, with the same Message-ID.
"""

from __future__ import annotations

import logging
import smtplib
import time
from datetime import timedelta
from email import encoders
from email.mime.base import MIMEBase

from django.conf import settings
from django.core.mail import get_connection
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import Q
from django.utils import timezone

from accounts.models import License
from helpdesk.compiled import Insert
from helpdesk.queue import enqueue_now
from helpdesk.transactions import unit_of_work
from templates_app import ticket_delivery
from templates_app.dkim_signing import SignedEmail, sign_if_ours
from templates_app.models import OutboundMessage, Template
from templates_app.rendering import Rendered, render
from templates_app.send_relay import SEND_TASK, send_after_commit

log = logging.getLogger(__name__)

# SEND_TASK: the task that sends a row, named as Celery names it (templates_app.send_relay): tasks.py calls this
# module, so this module never imports it.
# kind -> the function that renders a row written with `to_render` and stores it (templates_app.apps
# registers ticket_mail.render_queued: the composition is above this module, which only delivers).
RENDERERS: dict = {}


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

_insert = Insert(OutboundMessage)  # no save receivers: a fresh row's INSERT built once per process


def message_queue(
    *,
    license,
    kind: str,
    key: str,
    to: str,
    subject: str,
    rendered: Rendered | None,
    attachments=(),
    fresh: bool = False,
    **threading,
) -> OutboundMessage:
    """Store the message and send it after commit; the same `key` again returns the first row, queued once.

    `fresh`: the key cannot exist yet (it names an object created in this transaction): inserted without the
    look-up. `threading`: the ticket mail's fields (message_id, ticket, ticket_message, from_email, headers,
    and `to_render` with `rendered` None: the worker renders it, `RENDERERS`).
    """
    subject = " ".join(subject.split())[:300]  # a header: never a line break (company names are user input)
    fields = {"kind": kind, "to": to, "subject": subject}
    if rendered is not None:
        fields.update(text=rendered.text, html=rendered.html)
    if fresh:
        message = OutboundMessage(license=license, key=key[:200], **fields, **threading)
        _insert.save([message], lambda objs: objs[0].save(force_insert=True))  # as objects.create() would
        created = True
    else:
        message, created = OutboundMessage.objects.get_or_create(
            license=license, key=key[:200], defaults={**fields, **threading}
        )
    if created:
        if attachments:
            message.attachments.set(attachments)
        send_after_commit(str(message.pk))
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


def enqueue(*, message_id) -> bool:
    """Hand a stored message to the workers. If the broker is down the row stays pending for the sweeper."""
    return enqueue_now(SEND_TASK, str(message_id))


def _is_temporary(exc: Exception) -> bool:
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        return bool(codes) and all(400 <= code < 500 for code in codes)
    if isinstance(exc, smtplib.SMTPResponseException):
        return 400 <= exc.smtp_code < 500
    return isinstance(exc, smtplib.SMTPServerDisconnected | ConnectionError | TimeoutError | OSError)


def _one_line(value: str) -> str:
    return " ".join(str(value).split())  # a header value never carries a line break


def _email(message: OutboundMessage) -> SignedEmail:
    headers = {"X-HelpDesk-Message-ID": str(message.pk)}
    if message.message_id:
        headers["Message-ID"] = f"<{message.message_id}>"
    for name in ("In-Reply-To", "References", "Auto-Submitted"):
        if message.headers.get(name):
            headers[name] = _one_line(message.headers[name])
    if message.from_email:
        # The header names the team; the envelope sender stays ours (bounces come back to us).
        headers["From"] = _one_line(message.from_email)
    email = SignedEmail(
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
    if message.ticket_message_id is not None and message.kind != OutboundMessage.KIND_ACKNOWLEDGEMENT:
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
    # From an address of the license's active e-mail domain: DKIM-signed with its key
    return sign_if_ours(
        email, license_id=message.license_id, from_header=message.from_email or settings.DEFAULT_FROM_EMAIL
    )


CLAIM = timedelta(
    minutes=2
)  # at least; longer than any one send (each SMTP step is bounded by EMAIL_TIMEOUT)


def claim_length() -> timedelta:
    """How long a claim holds: longer than a send can take (connect, EHLO, TLS, AUTH, MAIL, RCPT, DATA...)."""
    return max(CLAIM, timedelta(seconds=10 * settings.EMAIL_TIMEOUT))


MAX_ATTEMPTS = 9  # the first try and 8 retries (templates_app.tasks.MAX_RETRIES)
RECORD_TRIES = (
    6  # writing an outcome after the relay answered: retried for ~30 s before it is left to the claim
)


def retry_delay(attempts: int) -> int:
    """Seconds before the next try after the `attempts`-th failed one: 30 s, 1 min, 2 min ... capped at 1 h."""
    return min(30 * 2 ** max(attempts - 1, 0), 3600)


def _claim(message_id):
    """Take the row for one attempt, in a transaction of its own that commits before the relay is contacted.

    Returns the row to send, or None (gone, finished, suppressed, or claimed by a worker whose claim has not
    expired). A claim that expired (its worker died between claiming and recording) is taken over: that is
    the at-least-once window, a worker killed after the relay's 250 and before its outcome was written.
    """
    with unit_of_work():
        message = OutboundMessage.objects.select_for_update().filter(pk=message_id).first()
        now = timezone.now()
        if message is None or message.status not in (
            OutboundMessage.STATUS_PENDING,
            OutboundMessage.STATUS_SENDING,
        ):
            return None
        if message.status == OutboundMessage.STATUS_SENDING and message.next_attempt_at > now:
            return None
        message.attempts += 1
        message.status, message.next_attempt_at = OutboundMessage.STATUS_SENDING, now + claim_length()
        message.save(update_fields=["attempts", "status", "next_attempt_at"])
        return message


def _record(message: OutboundMessage, outcome: str) -> bool:
    """Write the outcome of the attempt this worker claimed; False if the claim was taken over meanwhile.

    A database error here (SQLite busy, PostgreSQL away) must not lose what the relay said, or the sweeper
    would send the mail again when the claim expires: the write is retried for a while before giving up.
    """
    for attempt in range(RECORD_TRIES):
        try:
            with unit_of_work():
                claimed = OutboundMessage.objects.filter(
                    pk=message.pk, status=OutboundMessage.STATUS_SENDING, attempts=message.attempts
                )
                if (
                    claimed.update(
                        status=message.status,
                        sent_at=message.sent_at,
                        next_attempt_at=message.next_attempt_at,
                        last_error=message.last_error,
                    )
                    == 0
                ):
                    return False
                ticket_delivery.record(message, outcome, date=message.sent_at)
            return True
        except DatabaseError:
            if attempt == RECORD_TRIES - 1 or connection.in_atomic_block:  # inside a caller's: no retry
                log.exception(
                    "E-mail %s: could not record that it was %s; the sweeper takes it again after %s",
                    message.pk, outcome, claim_length(),
                )  # fmt: skip
                raise
            close_old_connections()
            time.sleep(min(2**attempt, 8))
    return False


def deliver(*, message_id) -> OutboundMessage | None:
    """Send one stored message unless it was sent (or is being sent) already; raises TemporaryFailure to ask
    for a retry.

    Three steps, each committed on its own so that no transaction stays open while the relay answers: claim
    the row (status `sending`), send, record the outcome. A second worker (a redelivered task, the sweeper's
    enqueue) finds the row sending or sent and does nothing. Only a worker that dies between the relay's 250
    and the outcome's commit leaves a claim that expires after CLAIM, and the mail is sent again (with the
    same Message-ID): at-least-once, with a window of milliseconds.
    """
    message = _claim(message_id)
    if message is None:
        return OutboundMessage.objects.filter(pk=message_id).first()
    try:
        if message.to_render is not None:
            _render(message)
        _email(message).send()
    except Exception as exc:
        if not isinstance(exc, smtplib.SMTPException | OSError):
            # A bug, not the relay: nothing was accepted, so the claim is freed for the sweeper's next try,
            # and after MAX_ATTEMPTS the row fails instead of coming back forever.
            message.last_error = f"{type(exc).__name__}: {exc}"[:2000]
            if message.attempts < MAX_ATTEMPTS:
                message.status, message.next_attempt_at = OutboundMessage.STATUS_PENDING, timezone.now()
                _record(message, "deferred")
            else:
                message.status, message.next_attempt_at = OutboundMessage.STATUS_FAILED, None
                _record(message, "failed")
            raise
        message.last_error = f"{type(exc).__name__}: {exc}"[:2000]
        temporary = _is_temporary(exc) and message.attempts < MAX_ATTEMPTS
        if temporary:
            message.status = OutboundMessage.STATUS_PENDING
            message.next_attempt_at = timezone.now() + timedelta(seconds=retry_delay(message.attempts))
        else:
            message.status, message.next_attempt_at = OutboundMessage.STATUS_FAILED, None
        if not _record(message, "deferred" if temporary else "failed"):
            return message
        if not temporary:
            log.warning("E-mail %s to %s failed permanently: %s", message.pk, message.to, exc)
            return message
        raise TemporaryFailure(message.last_error) from exc
    message.status, message.next_attempt_at = OutboundMessage.STATUS_SENT, None
    message.sent_at = timezone.now()
    _record(message, "sent")
    return message


def _render(message: OutboundMessage) -> None:
    """Render a row written with `to_render` (a ticket's mail) and store it, committed before the send: a retry
    sends the same mail. A failure here is a bug, not the relay's: `deliver` frees the claim for a retry, and
    after MAX_ATTEMPTS the row fails, as for any other error before the relay was contacted."""
    with unit_of_work():
        RENDERERS[message.kind](message)


@unit_of_work
def give_up(*, message_id) -> None:
    """After the last retry: the message stays unsent and says why."""
    message = (
        OutboundMessage.objects.select_for_update()
        .filter(pk=message_id, status=OutboundMessage.STATUS_PENDING)
        .first()
    )
    if message is not None:
        message.status, message.next_attempt_at = OutboundMessage.STATUS_FAILED, None
        message.save(update_fields=["status", "next_attempt_at"])
        ticket_delivery.record(message, "failed")


SWEEP_AFTER = timedelta(seconds=30)  # a row's own task (or retry) normally comes first
SWEEP_BATCH = 500
RETENTION = timedelta(days=30)


def sweep() -> int:
    """Enqueue the rows nobody is working on: never tried (a lost enqueue, a task that failed on a database
    error), due for their retry (a lost retry), or claimed by a worker that died. Every unfinished row is
    taken again until it is sent or given up; `deliver()` claims a row once, so an overlap costs nothing.
    """
    cutoff = timezone.now() - SWEEP_AFTER
    due = (
        OutboundMessage.objects.filter(
            Q(status=OutboundMessage.STATUS_PENDING, next_attempt_at__isnull=True, created_at__lt=cutoff)
            | Q(status=OutboundMessage.STATUS_PENDING, next_attempt_at__lt=cutoff)
            | Q(status=OutboundMessage.STATUS_SENDING, next_attempt_at__lt=timezone.now())
        )
        .order_by("created_at")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    requeued = 0
    for message_id in list(due):
        requeued += enqueue(message_id=message_id)
    return requeued


def requeue_stale_messages() -> int:
    """Drop finished messages after RETENTION (license by license), and sweep."""
    now = timezone.now()
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
    return sweep()
