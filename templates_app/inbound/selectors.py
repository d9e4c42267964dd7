"""Reads of inbound mail handling: which license a recipient names, and which ticket a mail belongs to
(threading by Message-IDs we received or sent, the signed reply address, the subject tag), blocked senders."""

from __future__ import annotations

import dataclasses
import pickle

from django.db import connection

from accounts.models import License, Team
from helpdesk.versioned import VersionedCopies
from templates_app.addresses import InboundAddress, inbound_domain, parse_inbound_address
from templates_app.inbound import parse, storm
from templates_app.models import BlockedSender, InboundMessage, Mailbox, OutboundMessage, TrustedSender
from tickets.models import Ticket

# --- recipients ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class Target:
    license: License
    address: str
    inbound: list[InboundAddress]  # every recipient address of this license (team, reply address)


# Every mail (and every RCPT of the SMTP entrance) resolves its recipient's license with the default team and
# templates. Read from the database that cost 5.2 M interpreter instructions (47.4 M -> 42.2 M) and a statement
# per mail (the select_related query compiled, four rows decoded; bench/mail_in.py --instructions), and one more
# statement per RCPT in smtp_inbound: each process keeps the license per version instead (helpdesk.versioned),
# dropped by any save or delete of the license, a team or a template of it (templates_app.apps), and hands out a
# copy of its own to each mail (unpickled: the ticket services set attributes on it, and the SMTP entrance's
# threads run side by side).
_licenses = VersionedCopies("inbound-license")


def license_changed(sender, *, instance, **kwargs) -> None:
    """Receiver of License's, Team's and Template's post_save and post_delete."""
    _licenses.changed(instance.pk if isinstance(instance, License) else instance.license_id)


def license_copy(license_id: int) -> License | None:
    """The license (with its default team and templates), a copy of this mail's own; None: no such license."""

    def load():
        license = (
            License.objects.select_related("default_team__template", "default_template")
            .filter(pk=license_id)
            .first()
        )
        return pickle.dumps(license)

    return pickle.loads(_licenses.get(license_id, load))


def license_for(addresses) -> Target | None:
    """The first license of ours named by one of `addresses` (with all its addresses among them)."""
    parsed = [(a, parse_inbound_address(a)) for a in addresses if a]
    for address, inbound in parsed:
        if inbound is None:
            continue
        # with what a new ticket's mail reads: the default team (and template) it lands in
        license = license_copy(inbound.license_id)
        if license is not None:
            same = [p for _, p in parsed if p is not None and p.license_id == license.pk]
            return Target(license, address.strip().strip("<>").lower(), same)
    return None


def candidates(mail: parse.ParsedMail, recipients) -> list[str]:
    if recipients:
        return list(recipients)
    return [*mail.delivered_to, *(a.email for a in mail.to), *(a.email for a in mail.cc)]


# --- lookups ----------------------------------------------------------------------------------------------


def id_variants(ids) -> list[str]:
    # stored with angle brackets; tolerate a sender side that stored them bare
    return [*ids, *(i.strip("<>") for i in ids)]


def is_our_message_id(message_id: str) -> bool:
    # the mail-out side makes its Message-IDs in the inbound domain (<hex>@inbound.<domain>)
    return message_id.strip("<>").lower().endswith("@" + inbound_domain())


def outbound_by_message_ids(license: License, ids) -> OutboundMessage | None:
    if not ids:
        return None
    return OutboundMessage.objects.filter(license=license, message_id__in=id_variants(ids)).first()


def ticket_of_message_ids(license: License, ids) -> Ticket | None:
    if not ids:
        return None
    ticket_id = (
        InboundMessage.objects.filter(license=license, message_id__in=id_variants(ids), ticket__isnull=False)
        .values_list("ticket_id", flat=True)
        .first()
    )
    if ticket_id is None:
        ticket_id = (
            OutboundMessage.objects.filter(
                license=license, message_id__in=id_variants(ids), ticket__isnull=False
            )
            .values_list("ticket_id", flat=True)
            .first()
        )
    return Ticket.objects.filter(pk=ticket_id).first() if ticket_id else None


def on_ticket(ticket: Ticket, email: str) -> bool:
    email = email.lower()
    return ticket.requester_email.lower() == email or any(
        (p.get("email") or "").lower() == email for p in ticket.people_in_the_loop or []
    )


def find_ticket(target: Target, mail: parse.ParsedMail, sender: str) -> tuple[Ticket | None, str]:
    license = target.license
    ticket = ticket_of_message_ids(license, mail.thread_ids)
    how = "references"
    if ticket is None:
        short_ids = [a.short_id for a in target.inbound if a.short_id]
        if short_ids:
            ticket, how = (
                Ticket.objects.filter(license=license, short_id=short_ids[0]).first(),
                "reply address",
            )
    if ticket is None and mail.subject_tag:
        tagged = Ticket.objects.filter(license=license, short_id=mail.subject_tag).first()
        # a tag alone is guessable: it threads only the mail of someone already on the ticket
        if tagged is not None and on_ticket(tagged, sender):
            ticket, how = tagged, "subject tag"
    if ticket is not None and ticket.parent_id:
        ticket = Ticket.objects.filter(pk=ticket.parent_id).first() or ticket  # merged: the parent goes on
    return ticket, how


def _entries(emails) -> set[str]:
    values = set()
    for email in emails:
        email = email.lower()
        values.update({email, "@" + email.rpartition("@")[2]})
    return values


@dataclasses.dataclass(frozen=True)
class Lookups:
    """What a mail's decisions read before anything is written, answered by `lookups` in one statement."""

    duplicate: bool  # an InboundMessage of the license already has this Message-ID
    ours: bool  # the Message-ID is one we sent (our own mail came back)
    blocked: bool  # a blocked sender among `senders` (or its domain)
    trusted: bool  # `trusted_sender` (or its domain) is trusted
    # the acknowledgements of the last hour (templates_app.inbound.storm.counting) when asked for; a mail written
    # again after its acknowledgement's confirmation failed carries the limit found reached instead
    acknowledged: tuple[int, int, int] | str | None = None


def lookups(
    license: License, *, message_id: str, senders: list[str], trusted_sender: str, acknowledged=None
) -> Lookups:
    """The duplicate check, the loop check, the blocked and the trusted sender lists in one round trip, and
    the storm limits' count when `acknowledged` asks for it ((sender, now): storm.counting's).

    Four ORM queries (InboundMessage, OutboundMessage, BlockedSender, TrustedSender) cost 6.0 M interpreter
    instructions and 3 statements per mail (the trusted list was read only for a spam-flagged mail), most of it
    compiling them (bench/mail_in.py --instructions, 42.2 M -> 36.2 M): the same predicates, written once.
    Read before the unit of work as they were read inside it: none of them locked anything (READ COMMITTED
    reads each statement's own committed snapshot either way). The storm's count too: an acknowledgement it
    allows is counted again at the commit, under a lock (templates_app/inbound/storm.py); read here, it costs
    no statement of its own (bench/README.md, "Issue 34: seventh round")."""
    ids, blocked, trusted = (
        id_variants([message_id]),
        sorted(_entries(senders)),
        sorted(_entries([trusted_sender])),
    )

    def each(values):
        return ", ".join(["%s"] * len(values))

    sql = (
        f"SELECT EXISTS (SELECT 1 FROM {InboundMessage._meta.db_table} WHERE license_id = %s AND message_id = %s),"
        f" EXISTS (SELECT 1 FROM {OutboundMessage._meta.db_table} WHERE license_id = %s AND message_id IN ({each(ids)})),"
        f" EXISTS (SELECT 1 FROM {BlockedSender._meta.db_table} WHERE license_id = %s AND email IN ({each(blocked)})),"
        f" EXISTS (SELECT 1 FROM {TrustedSender._meta.db_table} WHERE license_id = %s AND email IN ({each(trusted)}))"
    )
    params = [license.pk, message_id, license.pk, *ids, license.pk, *blocked, license.pk, *trusted]
    if acknowledged is not None:
        counting, counting_params = storm.counting(license.pk, *acknowledged)
        sql, params = f"{sql}, counted.* FROM ({counting}) AS counted", [*params, *counting_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    counted = tuple(int(value) for value in row[4:]) if acknowledged is not None else None
    return Lookups(*(bool(value) for value in row[:4]), acknowledged=counted)


def is_blocked(license: License, *emails: str) -> bool:
    """Whether any of `emails` (or its domain) is blocked in the license: one query (stored lower case)."""
    return BlockedSender.objects.filter(license=license, email__in=_entries(emails)).exists()


def is_trusted(license: License, email: str) -> bool:
    """Whether `email` (or its domain) is trusted in the license: one query (stored lower case)."""
    return TrustedSender.objects.filter(license=license, email__in=_entries([email])).exists()


def team_of(target: Target) -> Team | None:
    mailbox_ids = [a.mailbox_id for a in target.inbound if a.mailbox_id]
    if mailbox_ids:
        # a mailbox's address (its team; the license's default team when the mailbox or its team is gone)
        mailbox = (
            Mailbox.objects.filter(license=target.license, pk=mailbox_ids[0]).select_related("team").first()
        )
        return mailbox.team if mailbox is not None else None
    prefixes = [a.team_prefix for a in target.inbound if a.team_prefix]
    if prefixes:
        team = Team.objects.filter(license=target.license, id__startswith=prefixes[0]).first()
        if team is not None:
            return team
    return None


def team_of_ticket(ticket: Ticket) -> Team | None:
    return (
        ticket.assignment_team or ticket.teams.order_by("created_at").first() or ticket.license.default_team
    )
