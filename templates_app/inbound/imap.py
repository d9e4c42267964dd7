"""IMAP polling of mailboxes: beat enqueues one task per due mailbox (`mailboxes_poll_due`), and each task reads
that mailbox's new mail (`mailbox_poll`) through the one inbound service, as mail forwarded to the mailbox's
inbound address would arrive.

Read once: the folder is opened read-only (the customer's flags are left alone) and its UIDVALIDITY and the last
UID stored are kept in MailboxState. Each message is stored, and the UID advanced, in one transaction: a poll cut
anywhere (the connection, the worker) leaves every message either stored with its UID counted or neither, and the
next poll starts after the last one counted. The inbound service stores a Message-ID once per license, so a
message read again (a lost UID state, a new UIDVALIDITY, the same mail forwarded as well) is not stored twice.

Bounded: one poll holds a lease on its mailbox (no two polls of one mailbox at once; a dead worker's lease
expires), reads at most IMAP_MAX_MESSAGES_PER_POLL messages for at most IMAP_POLL_MAX_SECONDS (the rest at the next
tick), every socket operation has IMAP_TIMEOUT_SECONDS, and a message larger than INBOUND_MAX_MESSAGE_BYTES is
not fetched (skipped, and named in lastError). Each mailbox is its own task, so a slow one delays no other.

Failing: a connection, TLS, login or folder failure marks the mailbox `failing` with the error, polls it again
after a backoff (IMAP_POLL_SECONDS doubled per failure, at most an hour), and mails the license's owners once
per failing streak. The first successful poll sets it back to active. Nothing here raises to the caller
except database errors (the task is retried by the next beat tick).
"""

from __future__ import annotations

import contextlib
import dataclasses
import imaplib
import logging
import ssl
import time
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q
from django.utils import timezone

from accounts.models import ROLE_OWNER, STATUS_ACTIVE, Agent
from helpdesk.queue import enqueue_now
from helpdesk.transactions import unit_of_work
from templates_app import mail
from templates_app.inbound import services as inbound
from templates_app.inbound import storm
from templates_app.models import Mailbox, MailboxState
from templates_app.models_mailbox import SECURITY_SSL

logger = logging.getLogger("helpdesk.inbound.imap")

POLL_TASK = "templates_app.tasks.poll_mailbox"
KIND_MAILBOX_FAILING = "mailboxFailing"

FAILING_MAIL = """We could not fetch the mail of your mailbox "{name}" ({email}) from {host}:{port}.

The server said: {error}

The mailbox is marked as failing. We keep trying, less and less often (at most every hour), and it becomes
active again by itself once fetching works; nothing already in the mailbox is lost meanwhile. Check the
mailbox's IMAP settings (PATCH /v1/mailboxes/{mailbox_id}), or forward the address to {inbound} instead."""


class PollFailed(Exception):
    """The mailbox's server, account or folder failed us (the message goes into lastError)."""


@dataclasses.dataclass
class PollResult:
    stored: int = 0  # messages handed to the inbound service (stored or found duplicate)
    skipped: list[str] = dataclasses.field(default_factory=list)  # why messages were not fetched
    more: bool = False  # messages left for the next poll (the per-poll bounds)
    error: str = ""


def backoff_seconds(failures: int) -> int:
    return min(settings.IMAP_POLL_SECONDS * 2 ** max(failures - 1, 0), 3600)


def _ssl_context() -> ssl.SSLContext:
    """The system's CAs (certificates and host names verified), plus IMAP_CA_FILE's when set."""
    context = ssl.create_default_context()
    if settings.IMAP_CA_FILE:
        context.load_verify_locations(cafile=settings.IMAP_CA_FILE)
    return context


def connect(mailbox: Mailbox) -> imaplib.IMAP4:
    timeout = settings.IMAP_TIMEOUT_SECONDS
    host, port = mailbox.imap_host, mailbox.imap_port
    if mailbox.imap_security == SECURITY_SSL:
        client = imaplib.IMAP4_SSL(host, port, ssl_context=_ssl_context(), timeout=timeout)
    else:
        client = imaplib.IMAP4(host, port, timeout=timeout)
        try:
            client.starttls(ssl_context=_ssl_context())
        except BaseException:
            _close(client)
            raise
    try:
        client.login(mailbox.imap_username, mailbox.imap_password)
    except BaseException:
        _close(client)
        raise
    return client


def _close(client: imaplib.IMAP4) -> None:
    with contextlib.suppress(Exception):  # the connection may be broken already: nothing to close then
        client.shutdown()


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _describe(exc: BaseException) -> str:
    if isinstance(exc, PollFailed):
        return str(exc)
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed: {exc}"
    if isinstance(exc, TimeoutError):
        return "the server did not answer in time"
    if isinstance(exc, imaplib.IMAP4.abort):
        return f"the connection broke: {exc}"
    if isinstance(exc, imaplib.IMAP4.error):
        text = exc.args[0] if exc.args else exc
        return f"the server refused: {text.decode(errors='replace') if isinstance(text, bytes) else text}"
    if isinstance(exc, OSError):
        return f"could not connect: {exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}"


# --- reading ------------------------------------------------------------------------------------------------


def _open_folder(client: imaplib.IMAP4, mailbox: Mailbox) -> int:
    """Select the folder read-only; its UIDVALIDITY."""
    typ, data = client.select(_quoted(mailbox.imap_folder or "INBOX"), readonly=True)
    if typ != "OK":
        raise PollFailed(f"the folder {mailbox.imap_folder!r} cannot be opened: {data[0]!r}")
    _, values = client.response("UIDVALIDITY")
    try:
        return int(values[-1])
    except (TypeError, ValueError, IndexError):
        raise PollFailed("the server gave no UIDVALIDITY for the folder") from None


def _new_uids(client: imaplib.IMAP4, last_uid: int) -> list[int]:
    typ, data = client.uid("SEARCH", "UID", f"{last_uid + 1}:*")
    if typ != "OK":
        raise PollFailed(f"the server refused to list the messages: {data[0]!r}")
    # `n:*` names the last message even when its UID is below n
    return sorted(uid for uid in (int(u) for u in (data[0] or b"").split()) if uid > last_uid)


def _sizes(client: imaplib.IMAP4, uids: list[int]) -> dict[int, int]:
    sizes = {}
    for start in range(0, len(uids), 200):
        chunk = ",".join(str(uid) for uid in uids[start : start + 200])
        typ, data = client.uid("FETCH", chunk, "(RFC822.SIZE)")
        if typ != "OK":
            raise PollFailed(f"the server refused to give message sizes: {data[0]!r}")
        for line in data:
            if not isinstance(line, bytes):
                continue
            words = line.replace(b"(", b" ").replace(b")", b" ").split()
            fields = dict(zip(words[1::2], words[2::2], strict=False))
            if b"UID" in fields and b"RFC822.SIZE" in fields:
                sizes[int(fields[b"UID"])] = int(fields[b"RFC822.SIZE"])
    return sizes


def _message(client: imaplib.IMAP4, uid: int) -> bytes | None:
    """The message's bytes (None: it was expunged meanwhile)."""
    typ, data = client.uid("FETCH", str(uid), "(BODY.PEEK[])")
    if typ != "OK":
        raise PollFailed(f"the server refused to give message UID {uid}: {data[0]!r}")
    for item in data:
        if isinstance(item, tuple) and len(item) == 2:
            return item[1]
    return None


# --- storing ------------------------------------------------------------------------------------------------


def _advance(mailbox: Mailbox, validity: int, uid: int, raw: bytes | None) -> bool:
    """Store the message (if any) and count its UID, in one transaction; False if another poll counted it.

    Stored again when the mail's acknowledgement, allowed, is no longer once confirmed at the commit (another
    mail's reached a storm limit meanwhile: templates_app/inbound/storm.py); the mail's own unit, nested in this
    one, cannot: its confirmation runs at this one's commit. The second time is counted afresh; should another
    acknowledgement beat it again, the poll fails and the next one reads the message (its UID not counted)."""
    for _ in range(storm.ATTEMPTS - 1):
        with contextlib.suppress(storm.DecisionChanged):
            return _store_and_count(mailbox, validity, uid, raw)
    return _store_and_count(mailbox, validity, uid, raw)


def _store_and_count(mailbox: Mailbox, validity: int, uid: int, raw: bytes | None) -> bool:
    with unit_of_work():
        state = MailboxState.objects.select_for_update().get(pk=mailbox.pk)
        if state.uid_validity != validity or uid <= state.last_uid:
            return False
        if raw is not None:
            try:
                inbound.inbound_message_receive(raw=raw, recipients=[mailbox.inbound_address])
            except inbound.InboundRefused as exc:  # refused for good: as an MTA would bounce it
                logger.warning("mailbox %s: UID %s refused: %s", mailbox.pk, uid, exc)
        state.last_uid = uid
        state.save(update_fields=["last_uid"])
    return True


def _reset_validity(mailbox: Mailbox, validity: int) -> int:
    """The folder's last UID counted, starting over when its UIDVALIDITY is new (UIDs from before mean nothing)."""
    with unit_of_work():
        state = MailboxState.objects.select_for_update().get(pk=mailbox.pk)
        if state.uid_validity != validity:
            state.uid_validity, state.last_uid = validity, 0
            state.save(update_fields=["uid_validity", "last_uid"])
        return state.last_uid


def _read(mailbox: Mailbox, started: float) -> PollResult:
    result = PollResult()
    client = connect(mailbox)
    try:
        validity = _open_folder(client, mailbox)
        uids = _new_uids(client, _reset_validity(mailbox, validity))
        batch = uids[: settings.IMAP_MAX_MESSAGES_PER_POLL]
        result.more = len(uids) > len(batch)
        sizes = _sizes(client, batch)
        limit = settings.INBOUND_MAX_MESSAGE_BYTES
        for uid in batch:
            if time.monotonic() - started > settings.IMAP_POLL_MAX_SECONDS:
                result.more = True
                break
            size = sizes.get(uid, 0)
            if size > limit:
                result.skipped.append(
                    f"message UID {uid} ({size} bytes) not fetched: at most {limit} accepted"
                )
                _advance(mailbox, validity, uid, None)
                continue
            raw = _message(client, uid)
            try:
                if _advance(mailbox, validity, uid, raw):
                    result.stored += raw is not None
            except DatabaseError:
                raise
            except Exception as exc:  # a message the inbound service cannot take: stop here, retry later
                logger.exception("mailbox %s: UID %s could not be stored", mailbox.pk, uid)
                raise PollFailed(
                    f"message UID {uid} could not be stored: {type(exc).__name__}: {exc}"
                ) from exc
    finally:
        with contextlib.suppress(Exception):  # the connection may be gone: nothing to close then
            client.logout()
    return result


# --- the outcome --------------------------------------------------------------------------------------------


def _mail_owners(mailbox: Mailbox, error: str) -> None:
    license = mailbox.license
    body = FAILING_MAIL.format(
        name=mailbox.name,
        email=mailbox.email,
        host=mailbox.imap_host,
        port=mailbox.imap_port,
        error=error,
        mailbox_id=mailbox.pk,
        inbound=mailbox.inbound_address,
    )
    stamp = int(timezone.now().timestamp())
    owners = Agent.objects.filter(license_id=license.pk, status=STATUS_ACTIVE).order_by("created_at")
    for owner in owners:
        if ROLE_OWNER in owner.roles:
            mail.license_mail_queue(
                license=license,
                kind=KIND_MAILBOX_FAILING,
                key=f"mailboxFailing:{mailbox.pk}:{stamp}:{owner.pk}",
                to=owner.email,
                subject=f'Mailbox "{mailbox.name}" cannot be fetched',
                body=body,
            )


def _record_failure(mailbox: Mailbox, error: str) -> None:
    logger.warning("mailbox %s (%s) failing: %s", mailbox.pk, mailbox.imap_host, error)
    with unit_of_work():
        state = MailboxState.objects.select_for_update().get(pk=mailbox.pk)
        state.failing, state.failures = True, state.failures + 1
        state.last_error = error[:2000]
        state.next_poll_at = timezone.now() + timedelta(seconds=backoff_seconds(state.failures))
        if not state.owners_notified:
            _mail_owners(mailbox, error)
            state.owners_notified = True
        state.save()


def _record_success(mailbox: Mailbox, result: PollResult) -> None:
    now = timezone.now()
    with unit_of_work():
        state = MailboxState.objects.select_for_update().get(pk=mailbox.pk)
        state.failing, state.failures, state.owners_notified = False, 0, False
        state.last_error = "; ".join(result.skipped)[:2000]
        state.last_fetched_at = now
        state.next_poll_at = now if result.more else now + timedelta(seconds=settings.IMAP_POLL_SECONDS)
        state.save()


def _lease(mailbox_id) -> bool:
    now = timezone.now()
    seconds = settings.IMAP_POLL_MAX_SECONDS + 3 * settings.IMAP_TIMEOUT_SECONDS + 60
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    # MailboxState is not audited: a conditional update is the lease's atomic test-and-set
    taken = MailboxState.objects.filter(free, pk=mailbox_id).update(
        lease_until=now + timedelta(seconds=seconds)
    )
    return taken == 1


def mailbox_poll(*, mailbox_id) -> PollResult | None:
    """Read the mailbox's new mail; None when it is not polled (no IMAP, disabled, gone) or another poll runs."""
    started = time.monotonic()
    if not _lease(mailbox_id):
        return None
    try:
        mailbox = Mailbox.objects.select_related("license").filter(pk=mailbox_id).first()
        if mailbox is None or not mailbox.polls:
            return None
        try:
            result = _read(mailbox, started)
        except DatabaseError:
            raise
        except Exception as exc:  # the server's, the network's or a message's trouble: never the caller's
            error = _describe(exc)
            _record_failure(mailbox, error)
            return PollResult(error=error)
        _record_success(mailbox, result)
        return result
    finally:
        MailboxState.objects.filter(pk=mailbox_id).update(lease_until=None)


def mailboxes_poll_due(*, limit: int = 1000) -> int:
    """Enqueue a poll of every mailbox that is due (beat, every IMAP_POLL_SECONDS); the number enqueued.

    The next poll time moves on as the task is enqueued: a lost enqueue is made good a tick later."""
    now = timezone.now()
    due = list(
        MailboxState.objects.filter(mailbox__disabled=False)
        .exclude(mailbox__imap_host="")
        .filter(Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .order_by("next_poll_at")
        .values_list("pk", flat=True)[:limit]
    )
    if not due:
        return 0
    later = now + timedelta(seconds=settings.IMAP_POLL_SECONDS)
    MailboxState.objects.filter(pk__in=due).update(next_poll_at=later)
    for pk in due:
        enqueue_now(POLL_TASK, str(pk))
    return len(due)
