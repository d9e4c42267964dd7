"""Reads of inbound mail handling: which license a recipient names, and which ticket a mail belongs to
(threading by Message-IDs we received or sent, the signed reply address, the subject tag), blocked senders."""

from __future__ import annotations

import dataclasses

from accounts.models import License, Team
from templates_app.addresses import InboundAddress, inbound_domain, parse_inbound_address
from templates_app.inbound import parse
from templates_app.models import BlockedSender, InboundMessage, Mailbox, OutboundMessage, TrustedSender
from tickets.models import Ticket

# --- recipients ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class Target:
    license: License
    address: str
    inbound: list[InboundAddress]  # every recipient address of this license (team, reply address)


def license_for(addresses) -> Target | None:
    """The first license of ours named by one of `addresses` (with all its addresses among them)."""
    parsed = [(a, parse_inbound_address(a)) for a in addresses if a]
    for address, inbound in parsed:
        if inbound is None:
            continue
        # with what a new ticket's mail reads: the default team (and template) it lands in
        license = (
            License.objects.select_related("default_team__template", "default_template")
            .filter(pk=inbound.license_id)
            .first()
        )
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
