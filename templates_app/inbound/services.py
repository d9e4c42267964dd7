"""Receiving an e-mail: the one service behind every entrance (receive_mail, smtp_inbound, later IMAP polling).

`inbound_message_receive` stores the raw message as an InboundMessage and, depending on what the mail is:
- a bounce (DSN, mailer-daemon): recorded against the sent message it reports, never a ticket;
- our own mail come back (one of our Message-IDs, or sent from one of our inbound addresses): dropped (a loop);
- a reply (In-Reply-To/References naming a Message-ID we sent or received; else a signed reply address; else
  the `[#shortID]` subject tag from someone on the ticket, by From: a foreign Reply-To never counts): a client
  message on that ticket, which reopens a solved/closed ticket and moves a ticket out of spam/trash/archive back
  to `tickets`; unless its author (From) is not on the ticket or the mail is not authentic (no signed reply
  address, DKIM or DMARC pass: templates_app.inbound.authenticity) and the team's `unauthReplyCreatesNewTicket`
  is on: then a new ticket;
- anything else: a new ticket (requester From, or a single foreign Reply-To), in the team the address names.
Spam (`X-Spam-Flag: YES`, unless the From is a trusted sender) never threads into an existing ticket: it opens a
new ticket in the `spam` silo, so a spammer cannot write into (or un-spam) a customer's conversation. A blocked
sender's new mail goes to `spam` too; its reply to a ticket it is already on (by From, not in spam/trash/archive)
is kept there without reopening it.

Errors: UnknownRecipient (no license of ours is a recipient: the MTA bounces it, exit 67 / SMTP 550) and
MessageTooLarge; database trouble propagates (the entrances answer "try again later", exit 75 / SMTP 451).
"""

from __future__ import annotations

import dataclasses
import logging

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError
from django.utils import timezone

from accounts.models import Attachment, License, Team
from helpdesk.compiled import Insert
from helpdesk.context import EMAIL_MESSAGE, Actor, acting_as
from helpdesk.errors import TooLarge
from helpdesk.transactions import in_open_unit, on_rollback, unit_of_work
from helpdesk.versioned import read_together
from templates_app import senders, ticket_mail
from templates_app.addresses import parse_inbound_address
from templates_app.inbound import authenticity, parse, storm
from templates_app.inbound.selectors import (
    Lookups,
    Target,
    candidates,
    find_ticket,
    is_our_message_id,
    license_for,
    lookups,
    on_ticket,
    outbound_by_message_ids,
    team_of,
)
from templates_app.models import InboundMessage, OutboundMessage
from tickets import services as ticket_services
from tickets.models import READ_ONLY_SILOS, Message, Ticket

logger = logging.getLogger("helpdesk.inbound")


class InboundRefused(Exception):
    """The message is refused for good (the MTA bounces it to the sender with this reason)."""


class UnknownRecipient(InboundRefused):
    pass


class MessageTooLarge(InboundRefused):
    pass


@dataclasses.dataclass(frozen=True)
class Entrance:
    """How a message came in when it is not plain mail: a contact form's post (templates_app.contact_forms)
    builds a message and hands it in with `Entrance(source="form", threads=False, custom_fields=...)`."""

    source: str = ""  # the ticket events' source ("": the e-mail actor's usual `email`)
    threads: bool = True  # False: always a new ticket (a typed address proves nothing, so never a reply)
    custom_fields: dict | None = None  # the new ticket's


MAIL = Entrance()


@dataclasses.dataclass
class Result:
    status: str  # "stored" or "duplicate"
    inbound_id: object = None
    kind: str = ""  # InboundMessage.kind
    license_id: int | None = None
    ticket_id: object = None
    auto_reply_allowed: bool = False
    note: str = ""


# --- decisions --------------------------------------------------------------------------------------------


def _requester(mail: parse.ParsedMail) -> parse.Address | None:
    """From; a contact form's mail (From: a no-reply robot, Reply-To: the customer) has one foreign Reply-To."""
    foreign = [a for a in mail.reply_to if parse_inbound_address(a.email) is None]
    if (
        len(foreign) == 1
        and len(mail.reply_to) == 1
        and (mail.sender is None or foreign[0].email != mail.sender.email)
    ):
        return foreign[0]
    return mail.sender


@dataclasses.dataclass(frozen=True)
class _Who:
    sender: str  # who wrote: From (the envelope sender when there is none), as stored
    requester: parse.Address | None  # whom a new ticket is of; None: no sender address at all


def _who(mail: parse.ParsedMail, envelope_sender: str | None) -> _Who:
    sender, requester = (mail.sender.email[:254] if mail.sender else ""), _requester(mail)
    if requester is None and envelope_sender and "@" in envelope_sender and len(envelope_sender) <= 254:
        # no From header (a bare script's mail): the envelope sender is who wrote
        requester = parse.Address(envelope_sender.lower())
        sender = requester.email
    return _Who(sender, requester)


def _mark_inbox_used(license: License) -> None:
    if (license.flags or {}).get("defaultInboxUsed"):
        return
    locked = License.objects.select_for_update(no_key=True).get(pk=license.pk)
    if not (locked.flags or {}).get("defaultInboxUsed"):
        locked.flags = {**(locked.flags or {}), "defaultInboxUsed": True}
        locked.save(update_fields=["flags"])
    previous, license.flags = license.flags, locked.flags
    on_rollback(lambda: setattr(license, "flags", previous))  # the process's copy: as the database has it


def _files_note(names: list[str], why: str) -> str:
    listed = ", ".join(name for name in names[:20] if name) + (", ..." if len(names) > 20 else "")
    return f"[{len(names)} more files were not stored ({why}): {listed}. The original e-mail is kept.]"


def _store_files(license: License, files: list[parse.File], omitted: list[str]) -> tuple[object, str]:
    """The mail's files through the attachment storage (like API uploads): (a transaction ID or None, a note).

    Files beyond UPLOAD_MAX_FILES_PER_TRANSACTION, or all of them when the license's storage is full, are
    left out and the note names them: a limit that no retry can change never refuses the mail (the raw
    message, with every file, is kept on the InboundMessage)."""
    most = settings.UPLOAD_MAX_FILES_PER_TRANSACTION
    if most and len(files) > most:
        files, omitted = files[:most], [f.name for f in files[most:]] + omitted
    note = _files_note(omitted, f"at most {most} per message") if omitted else ""
    if not files:
        return None, note
    txn = ticket_services.transaction_create(license=license)
    uploads = [
        SimpleUploadedFile(f.name or "attachment", f.content, content_type=f.content_type) for f in files
    ]
    try:
        stored = ticket_services.attachments_add(txn=txn, files=uploads)
    except TooLarge as exc:  # the license's storage is full (checked before anything is written)
        return None, _files_note([f.name for f in files], str(exc).rstrip(".")) + (f" {note}" if note else "")
    for attachment, file in zip(stored, files, strict=True):
        if file.cid:
            Attachment.objects.filter(pk=attachment.pk).update(cid=file.cid)
    return txn.pk, note


def _message_dict(mail: parse.ParsedMail, note: str = "", no_auto_reply: str = "") -> dict:
    message = {"text": f"{mail.text}\n\n{note}" if note else mail.text, "isPrivate": False}
    if no_auto_reply:
        message["noAutoReply"] = no_auto_reply  # a rule never answers it (tickets.rules.engine)
    if mail.html:
        message["richTextHtml"] = mail.html
    return message


def _added_message(ticket: Ticket) -> Message | None:
    added = getattr(ticket, "last_added_message", None)
    if added is not None:
        return added
    return Message.objects.filter(ticket=ticket).order_by("-created_at").only("id").first()


# --- the outcomes -----------------------------------------------------------------------------------------


def _record_bounce(inbound: InboundMessage, mail: parse.ParsedMail) -> None:
    bounce = mail.bounce
    inbound.kind = InboundMessage.KIND_BOUNCE
    original = outbound_by_message_ids(
        inbound.license, [bounce.original_message_id] if bounce.original_message_id else []
    )
    if original is None:
        inbound.note = f"bounce of {bounce.original_message_id or 'an unknown message'} (not one we sent)"
        return
    # Only what we sent to that recipient: anyone can write a DSN naming one of our Message-IDs (leaked by
    # the recipient's systems) and other addresses, to mark them bounced.
    named = [r.lower() for r, action, _ in bounce.recipients if action in ("failed", "")]
    if bounce.recipients and original.to.lower() not in named:
        inbound.note = f"bounce of {bounce.original_message_id}: not of its recipient, ignored"[:300]
        return
    failed = [original.to]
    inbound.note = f"bounce of {bounce.original_message_id}: {', '.join(failed)}"[:300]
    inbound.ticket_id = original.ticket_id
    if original.ticket_message_id:
        for recipient in failed:
            ticket_services.message_delivery_record(
                message_id=original.ticket_message_id, recipient=recipient, status="bounced"
            )
    OutboundMessage.objects.filter(pk=original.pk).update(status="bounced", last_error=inbound.note)


def _people(target: Target, mail: parse.ParsedMail, requester: parse.Address) -> tuple[list[dict], str]:
    """The Cc in the loop, at most MAIL_MAX_PEOPLE_IN_THE_LOOP (one mail with 3,000 Cc would make every
    answer 3,001 mails from the team's address to strangers), and a note when some were left out."""
    ours, seen, people = {target.address, requester.email}, set(), []
    for a in mail.cc:
        if a.email not in ours and a.email not in seen and parse_inbound_address(a.email) is None:
            seen.add(a.email)
            people.append({"email": a.email, "name": a.name})
    most = settings.MAIL_MAX_PEOPLE_IN_THE_LOOP
    dropped = len(people) - most + mail.cc_omitted
    if dropped <= 0:
        return people, ""
    return people[:most], f"[{dropped} more Cc were not put in the loop: at most {most} people per ticket.]"


def _new_ticket(
    inbound,
    target: Target,
    mail,
    requester,
    *,
    spam: bool,
    team: Team | None,
    txn_id,
    note: str,
    custom_fields,
    automatic: str,
    number: int | None,
) -> Ticket:
    people, dropped = _people(target, mail, requester)
    if dropped:
        note = f"{note} {dropped}".strip()
        inbound.note = inbound.note or dropped[1:-1]
    ticket = in_open_unit(  # the mail's unit of work rolls back whole: no savepoint of its own
        ticket_services.ticket_create,
        license=target.license,
        subject=mail.subject or "(no subject)",
        requester={"email": requester.email, "name": requester.name},
        message=_message_dict(mail, note, automatic),
        author_type="client",
        teams=[team] if team else None,
        people_in_the_loop=people,
        transaction_id=txn_id,
        custom_fields=custom_fields,
        sender_checked=True,  # the blocked list was read above (From and the requester)
        number=number,
    )
    if spam:
        ticket = ticket_services.ticket_update(ticket=ticket, silo="spam")
    return ticket


def _blocked_reply_kept(ticket: Ticket, author: str) -> Ticket | None:
    """A blocked sender's reply to a ticket it is already on (by From) is kept there, without reopening it;
    one to a ticket in spam/trash/archive, or to a ticket it is not on, opens a new ticket in spam."""
    if ticket.silo in READ_ONLY_SILOS or not on_ticket(ticket, author):
        return None
    return ticket


def _reply(ticket: Ticket, mail, txn_id, note: str, *, reopen: bool = True, automatic: str = "") -> Ticket:
    if ticket.silo in READ_ONLY_SILOS:
        # spam/trash: the contract moves it back; archive too, or the customer's reply could not be added
        ticket = ticket_services.ticket_update(ticket=ticket, silo="tickets")
    reopen = {"status": "open"} if reopen and ticket.status in ("solved", "closed") else {}
    return in_open_unit(  # the mail's unit of work rolls back whole: no savepoint of its own
        ticket_services.ticket_update,
        ticket=ticket,
        message=_message_dict(mail, note, automatic),
        author_type="client",
        transaction_id=txn_id,
        **reopen,
    )


def _may_open_a_ticket(target: Target, mail: parse.ParsedMail, who: _Who, entrance) -> bool:
    """Whether `_handle` will open a new ticket for the mail unless the look-ups say it is our own, known
    without reading anything: not a bounce nor our own mail by its Message-ID or sender, a sender, and nothing
    to thread it by (find_ticket would read nothing)."""
    if mail.bounce is not None or who.requester is None or is_our_message_id(mail.message_id):
        return False
    if parse_inbound_address(mail.sender.email[:254] if mail.sender else "") is not None:
        return False
    threads_by = mail.thread_ids or mail.subject_tag or any(a.short_id for a in target.inbound)
    return not (entrance.threads and threads_by)


def _handle(
    inbound: InboundMessage, target: Target, mail: parse.ParsedMail, raw: bytes, envelope_sender, entrance,
    who: _Who, found: Lookups, number: int | None,
) -> None:  # fmt: skip
    license, sender = target.license, inbound.sender
    if mail.bounce is not None:
        _record_bounce(inbound, mail)
        return
    if parse_inbound_address(sender) is not None or is_our_message_id(mail.message_id) or found.ours:
        inbound.kind, inbound.note = InboundMessage.KIND_LOOP, "our own mail came back: dropped"
        return
    requester, inbound.sender = who.requester, who.sender
    sender = who.sender
    if requester is None:
        inbound.kind, inbound.note = InboundMessage.KIND_LOOP, "no sender address: dropped"
        return
    blocked = found.blocked
    # trusted by From alone (a Reply-To is anyone's to write); a block of the same sender still wins
    flagged = mail.spam_flag and not found.trusted
    spam = blocked or flagged
    # who wrote is From: a foreign Reply-To names whom to answer, never who may write into a ticket (else
    # anyone could post, and reopen, as the requester by naming her in Reply-To)
    author = sender or requester.email
    # from here on the sender is the person we would answer: a contact form's robot From must not make all
    # its customers one sender (storm limit) nor keep them off their own tickets
    inbound.sender = sender = requester.email[:254]
    ticket, how = (None, "") if flagged or not entrance.threads else find_ticket(target, mail, author)
    ticket = _blocked_reply_kept(ticket, author) if blocked and ticket is not None else ticket
    team, text_note = team_of(target), ""
    if ticket is not None:  # the author and the mail's authenticity decide whether it goes there
        decision = authenticity.decide(target=target, mail=mail, raw=raw, ticket=ticket, author=author)
        inbound.note, text_note = decision.note, decision.text_note
        how = f"{how}, authenticated by {decision.evidence}" if decision.evidence else how
        if decision.ticket is None:
            team, ticket = decision.team, None
    txn_id, note = _store_files(license, mail.files, mail.files_omitted)
    note = f"{text_note} {note}".strip() if ticket is not None and text_note else note
    inbound.note = inbound.note or note[1:-1] or mail.problem
    # an automatic mail (an auto-reply...) is marked on its message: no rule answers it
    automatic = storm.automatic_refusal(mail=mail, envelope_sender=envelope_sender)
    reason = automatic
    if ticket is not None:
        ticket = _reply(ticket, mail, txn_id, note, reopen=not blocked, automatic=automatic)
        inbound.kind = InboundMessage.KIND_REPLY
        kept = " kept, from a blocked sender" if blocked else ""
        inbound.note = inbound.note or f"reply to #{ticket.short_id} (by {how}){kept}"
    else:
        ticket = _new_ticket(
            inbound, target, mail, requester, spam=spam, team=team, txn_id=txn_id, note=note,
            custom_fields=entrance.custom_fields, automatic=automatic, number=number,
        )  # fmt: skip
        inbound.kind = InboundMessage.KIND_TICKET
        reason = storm.auto_reply_refusal(
            license=license,
            mail=mail,
            envelope_sender=envelope_sender,
            sender=sender,
            now=inbound.created_at,
            blocked=blocked,
            inbound_id=inbound.pk,
            counted=found.acknowledged,
        )
        inbound.auto_reply_allowed = not reason
        inbound.note = inbound.note or reason or ("spam" if spam else "")
    inbound.ticket = ticket
    inbound.ticket_message = _added_message(ticket)
    if reason and not automatic and inbound.ticket_message is not None:
        # past the storm limits (or spam, blocked): no rule answers it either; the rules run after this
        Message.objects.filter(pk=inbound.ticket_message.pk).update(no_auto_reply=reason[:200])
    if inbound.auto_reply_allowed:
        ticket_mail.acknowledgement_queue(
            ticket=ticket, message=inbound.ticket_message, received_message_id=mail.message_id
        )


# no save receivers: the mail's row inserted by an INSERT built once per process (helpdesk.compiled), not by
# Model.save: a new ticket by mail 21.22 -> 20.89 M instructions (bench/README.md "fourth round")
_inbound_insert = Insert(InboundMessage)


def _store(
    target: Target, raw: bytes, mail: parse.ParsedMail, envelope_sender, entrance: Entrance, who: _Who, found,
    now, may_open: bool,
) -> Result:  # fmt: skip
    sender = mail.sender.email if mail.sender else ""
    fields = dict(
        created_at=now,
        license=target.license,
        message_id=mail.message_id,
        kind=InboundMessage.KIND_TICKET,
        sender=sender[:254],
        recipient=target.address[:254],
        subject=mail.subject[:500],
        size=len(raw),
    )
    inbound = InboundMessage(**fields)
    try:
        # a new ticket's number taken before the unit, not held to its commit (ticket_number_reserve), for a
        # mail certain to open one: a hint only, wrong it leaves a number unused (a gap) or the number taken
        # inside the unit, as before
        opens = may_open and not found.ours
        number = ticket_services.ticket_number_reserve(target.license) if opens else None
        for attempt in range(1, storm.ATTEMPTS + 1):
            # the raw file first, before the unit of work: not inside the window where the ticket write holds
            # its locks, ~0.4 ms of it per mail; deleted if the unit rolls back (an outer one too: IMAP's), so
            # the mail is stored whole (file and rows) or not at all (a process dying before the commit leaves
            # a file no row names, as it did when the file was written inside the unit)
            inbound.raw.save(f"{inbound.pk}.eml", ContentFile(raw), save=False)
            try:
                with unit_of_work():
                    on_rollback(lambda row=inbound: row.raw.delete(save=False))
                    with acting_as(Actor(type=EMAIL_MESSAGE, email=sender, source=entrance.source)):
                        _mark_inbox_used(target.license)  # before any ticket is locked (docs/architecture.md)
                        _handle(inbound, target, mail, raw, envelope_sender, entrance, who, found, number)
                    inbound.note = inbound.note[:300]
                    # inserted last, complete, in one statement: a concurrent delivery of the same message fails
                    # here on the unique index (IntegrityError: everything it wrote is rolled back) and is
                    # answered as a duplicate
                    _inbound_insert.save([inbound], lambda objs: objs[0].save(force_insert=True))
                break
            except storm.DecisionChanged as changed:
                # a limit was reached by another mail's acknowledgement while this one was written: stored again,
                # from the row as it was (the same ID, time and number), refused for the limit the confirmation
                # found reached (templates_app/inbound/storm.py)
                if attempt == storm.ATTEMPTS:
                    raise
                inbound = InboundMessage(**fields, id=inbound.pk)
                found = dataclasses.replace(found, acknowledged=changed.reached)
    except BaseException:
        inbound.raw.delete(save=False)
        raise
    return Result(
        status="stored",
        inbound_id=inbound.pk,
        kind=inbound.kind,
        license_id=target.license.pk,
        ticket_id=inbound.ticket_id,
        auto_reply_allowed=inbound.auto_reply_allowed,
        note=inbound.note,
    )


@read_together()  # the versions of the license's copies (license, rules, SLA, webhooks, addresses) in one read
def inbound_message_receive(
    *,
    raw: bytes,
    recipients: list[str] | None,
    envelope_sender: str | None = None,
    entrance: Entrance = MAIL,
) -> Result:
    """Receive one RFC 5322 message for `recipients` (the envelope's; None: read them from the headers).

    `envelope_sender` is SMTP's MAIL FROM when known ("" for the null reverse path of a bounce); `entrance`
    says how it came in when not by mail (a contact form)."""
    limit = settings.INBOUND_MAX_MESSAGE_BYTES
    if len(raw) > limit:
        raise MessageTooLarge(f"Message too large: {len(raw)} bytes, at most {limit} accepted.")
    mail = parse.parse(raw, max_files=settings.UPLOAD_MAX_FILES_PER_TRANSACTION)
    target = license_for(candidates(mail, recipients))
    if target is None:
        logger.warning(
            "inbound mail refused: no license for %s (from %s, %s)",
            ", ".join(candidates(mail, recipients)) or "no recipient",
            mail.sender.email if mail.sender else "<>",
            mail.message_id,
        )
        raise UnknownRecipient("No such recipient: no help desk receives mail at this address.")
    who = _who(mail, envelope_sender)
    now = timezone.now()  # when it was received: its row's time, the end of the hour the storm limits count
    may_open = _may_open_a_ticket(target, mail, who, entrance)
    found = lookups(
        target.license,
        message_id=mail.message_id,
        senders=[who.sender, who.requester.email] if who.requester else [who.sender],
        trusted_sender=who.sender,
        acknowledged=storm.count_ahead(who.requester.email[:254], now) if may_open else None,
    )
    existing = None
    if found.duplicate:
        existing = InboundMessage.objects.filter(license=target.license, message_id=mail.message_id).first()
    if existing is None:
        try:
            return _store(target, raw, mail, envelope_sender, entrance, who, found, now, may_open)
        except IntegrityError:
            existing = InboundMessage.objects.filter(
                license=target.license, message_id=mail.message_id
            ).first()
            if existing is None:
                raise
    return Result(
        status="duplicate",
        inbound_id=existing.pk,
        kind=existing.kind,
        license_id=target.license.pk,
        ticket_id=existing.ticket_id,
        auto_reply_allowed=False,
        note="already received",
    )


# --- blocked senders (templates_app.senders; these names are the admin's) -----------------------------------

blocked_sender_create = senders.blocked_sender_create
blocked_sender_delete = senders.blocked_sender_delete


# --- purge ------------------------------------------------------------------------------------------------


def on_tickets_purging(sender, *, license_id: int, ticket_ids: list, **kwargs) -> None:
    """Receiver of `tickets.signals.tickets_purging`: the received mail of purged tickets goes with them.

    The raw files are listed in PurgedFile in the batch's transaction; the purge deletes listed files at the
    start of its next run (delete_leftover_files), so a rolled-back batch deletes none."""
    from tickets.models_purge import PurgedFile

    rows = InboundMessage.objects.filter(license_id=license_id, ticket_id__in=ticket_ids)
    names = [name for name in rows.values_list("raw", flat=True) if name]
    PurgedFile.objects.bulk_create([PurgedFile(name=name) for name in names])
    rows._raw_delete(rows.db)
