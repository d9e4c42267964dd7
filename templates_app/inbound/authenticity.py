"""Who may write into a ticket by e-mail: a mail threads onto its ticket as the requester only when its author
(From: a foreign Reply-To never counts) is on the ticket AND the mail is authentic, shown by one of:
- the ticket's signed reply address among the recipients (only mail we sent carried it);
- an `Authentication-Results` header (RFC 8601) of an MTA we trust (HELPDESK_TRUSTED_AUTHSERV_IDS) saying
  `dmarc=pass` for the From domain or `dkim=pass` for a domain aligned with it; anyone can write such a header,
  so only the top-most one of each trusted authserv-id counts (the MTA prepends its own), and none below a
  header of an untrusted host; the MTA should remove incoming headers that claim its id (RFC 8601 section 5);
- our own check (HELPDESK_INBOUND_DKIM_VERIFY): a DKIM signature of a domain aligned with From that verifies
  (dkimpy, keys looked up through templates_app.dns).
Otherwise the ticket's team's `unauthReplyCreatesNewTicket` decides: on, a new ticket; off, the mail is added to
the ticket as before (contract), and one from someone not on the ticket says so in its text.

Alignment is DMARC's relaxed one, approximated without the public suffix list: the domains are equal or one is
a subdomain of the other (a signature of `co.uk` would need a key published at `co.uk`)."""

from __future__ import annotations

import dataclasses
import email.parser
import email.policy
import logging
import re

import dkim
from django.conf import settings

from templates_app.dns import dkim_dnsfunc
from templates_app.inbound import parse
from templates_app.inbound.selectors import Target, on_ticket, team_of_ticket
from tickets.models import Ticket

logger = logging.getLogger("helpdesk.inbound")

_COMMENT = re.compile(r"\([^()]*\)")


@dataclasses.dataclass(frozen=True)
class Decision:
    ticket: Ticket | None  # where the mail goes: None for a new ticket
    team: object = None  # the new ticket's team (the old ticket's), when `ticket` is None
    note: str = ""  # for the admin (InboundMessage.note)
    text_note: str = ""  # added to the message's text (a mail from someone not on the ticket)
    evidence: str = ""  # how the mail was shown authentic


# --- the evidence -----------------------------------------------------------------------------------------


def _domain(address: str) -> str:
    return (address or "").rpartition("@")[2].strip().strip(".>").lower()


def aligned(signer: str, author_domain: str) -> bool:
    signer, author_domain = signer.strip().strip(".").lower(), author_domain.strip().strip(".").lower()
    if not signer or not author_domain or "." not in signer:
        return False
    return (
        signer == author_domain
        or author_domain.endswith("." + signer)
        or signer.endswith("." + author_domain)
    )


def _headers(raw: bytes):
    return email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw)


def results(raw: bytes) -> list[tuple[str, str, str, dict[str, str]]]:
    """(authserv-id, method, result, {property: value}) of the Authentication-Results headers we believe."""
    trusted = {value.lower() for value in settings.HELPDESK_TRUSTED_AUTHSERV_IDS}
    seen, believed = set(), []
    for value in _headers(raw).get_all("Authentication-Results") or []:
        parts = _COMMENT.sub(" ", str(value)).split(";")
        authserv = (parts[0].split() or [""])[0].lower()
        if authserv not in trusted:
            break  # written before the mail reached our trusted MTAs: anyone's words
        if authserv in seen:
            continue  # the MTA's own header is the top-most of its id; lower ones came with the mail
        seen.add(authserv)
        for part in parts[1:]:
            tokens = part.split()
            if not tokens or "=" not in tokens[0]:
                continue
            method, _, result = tokens[0].partition("=")
            props = dict(t.split("=", 1) for t in tokens[1:] if "=" in t)
            believed.append(
                (authserv, method.lower(), result.lower(), {k.lower(): v for k, v in props.items()})
            )
    return believed


def _by_results(raw: bytes, author_domain: str) -> str:
    for authserv, method, result, props in results(raw):
        if result != "pass":
            continue
        if method == "dmarc" and aligned(props.get("header.from", ""), author_domain):
            return f"dmarc=pass by {authserv}"
        signer = props.get("header.d") or _domain(props.get("header.i", ""))
        if method == "dkim" and aligned(signer, author_domain):
            return f"dkim=pass ({signer}) by {authserv}"
    return ""


def _by_own_dkim(raw: bytes, author_domain: str) -> str:
    if not settings.HELPDESK_INBOUND_DKIM_VERIFY:
        return ""
    signatures = _headers(raw).get_all("DKIM-Signature") or []
    checker = None
    for index, value in enumerate(signatures[:5]):  # a mail with 1,000 signatures gets 5 look-ups
        tags = dict(t.strip().split("=", 1) for t in str(value).split(";") if "=" in t)
        signer = "".join(tags.get("d", "").split())
        if not aligned(signer, author_domain):
            continue
        try:
            checker = checker or dkim.DKIM(raw, timeout=settings.HELPDESK_DNS_TIMEOUT_SECONDS)
            if checker.verify(idx=index, dnsfunc=dkim_dnsfunc):
                return f"dkim signature of {signer} verified"
        except Exception as exc:  # dkimpy raises many kinds for malformed mail: not authentic, never a 451
            logger.info("DKIM check of a received mail failed: %s", exc)
    return ""


def _to_reply_address(target: Target, ticket: Ticket) -> bool:
    """Sent to the signed reply address of `ticket` (or of a ticket merged into it)."""
    short_ids = [a.short_id for a in target.inbound if a.short_id]
    if not short_ids or ticket.short_id in short_ids:
        return bool(short_ids)
    return Ticket.objects.filter(license_id=ticket.license_id, short_id__in=short_ids, parent=ticket).exists()


def authentic(*, target: Target, mail: parse.ParsedMail, raw: bytes, ticket: Ticket) -> str:
    """How the mail is shown authentic for `ticket` ("" when it is not)."""
    if _to_reply_address(target, ticket):
        return "signed reply address"
    author_domain = _domain(mail.sender.email if mail.sender else "")
    if not author_domain:
        return ""
    return _by_results(raw, author_domain) or _by_own_dkim(raw, author_domain)


# --- the decision -----------------------------------------------------------------------------------------


def decide(*, target: Target, mail: parse.ParsedMail, raw: bytes, ticket: Ticket, author: str) -> Decision:
    """Where a mail that threading matched to `ticket` goes (module docstring)."""
    author_on = on_ticket(ticket, author)
    if author_on and _to_reply_address(target, ticket):  # the usual reply: decided without a query
        return Decision(ticket, evidence="signed reply address")
    team = team_of_ticket(ticket)
    creates = team is not None and bool((team.settings or {}).get("unauthReplyCreatesNewTicket"))
    if not creates:
        if author_on:
            return Decision(ticket)
        return Decision(
            ticket,
            note=f"{author} is not on ticket #{ticket.short_id}: added (team setting)",
            text_note=f"[Sent by {author}, who is not on this ticket.]",
        )
    if not author_on:
        return Decision(
            None, team, f"{author} is not on ticket #{ticket.short_id}: a new ticket (team setting)"
        )
    how = authentic(target=target, mail=mail, raw=raw, ticket=ticket)
    if not how:
        return Decision(
            None, team, f"not authenticated as {author} (no reply address, DKIM or DMARC): a new ticket"
        )
    return Decision(ticket, evidence=how)
