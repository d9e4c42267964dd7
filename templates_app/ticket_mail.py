"""Mail out: a ticket's public agent messages go to the requester and the people in the loop; a ticket that
came by e-mail gets an acknowledgement when the inbound service decides it may (`acknowledgement_queue`).

`on_message_created` is connected to `tickets.signals.message_created` and runs inside the message's
transaction: it decides who gets the mail, its subject, Message-ID and threading headers, and writes one
`OutboundMessage` row per recipient with what the mail is rendered from (`to_render`: the team that answers,
the ticket's values at the time of writing, an acknowledgement's text), so a rolled-back message leaves no row
and sends nothing; the rows are enqueued after commit (`mail.message_queue`). The worker renders the mail
(the team's template, else the license's default, through the one renderer; From and Reply-To) before its first
send (`render_queued`, called by `mail.deliver`), stores it on the row, and sends it. Out of the request: an
agent reply 65.8 -> 50.2 M interpreter instructions, a create 48.0 -> 44.0 M (issue 34, bench/write_cpu.py).

Threading: every row has our own Message-ID (`<hex>@inbound.<domain>`, stored without brackets in
`OutboundMessage.message_id`, decided when the row is written so that a bounce or a reply finds it at once),
`In-Reply-To`/`References` name the ticket's earlier Message-IDs (ours to that recipient and the ones we
received), and `Reply-To` is the ticket's signed reply address, so a reply threads even when the client drops
the headers.
"""

from __future__ import annotations

import html as html_lib
import logging
import uuid
from email.utils import formataddr

from django.conf import settings

from accounts.attachments import signed_attachment_url
from accounts.models import Team
from helpdesk.versioned import VersionedCopies
from templates_app import mail
from templates_app.addresses import inbound_domain, license_address, reply_address
from templates_app.models import Mailbox, OutboundMessage, ReplyAddress
from templates_app.rendering import PLACEHOLDER_RE, Rendered, render
from templates_app.ticket_delivery import record_queued, split_attachments, thread_ids, threading_headers

log = logging.getLogger(__name__)

THREAD_LENGTH = 20  # earlier messages quoted below a reply (ticketThread)


# --- who, from where ----------------------------------------------------------------------------------------


def ticket_team(ticket):
    """The team that answers: the assigned team, else the ticket's first team, else the license's default."""
    if ticket.assignment_team_id:
        return ticket.assignment_team
    prefetched = getattr(ticket, "_prefetched_objects_cache", {}).get("teams")
    if prefetched is not None:  # a new ticket's teams (tickets.services), or a list view's prefetch
        first = min(prefetched, key=lambda team: (team.name, str(team.pk)), default=None)
    else:
        first = ticket.teams.order_by("name").first()
    return first or ticket.license.default_team


def ticket_team_id(ticket):
    """`ticket_team`'s ID, read without loading the team where the ticket's row or prefetch names it."""
    if ticket.assignment_team_id:
        return ticket.assignment_team_id
    prefetched = getattr(ticket, "_prefetched_objects_cache", {}).get("teams")
    if prefetched is not None and len(prefetched) == 1:  # no names to compare (a new ticket's default team
        first_id = prefetched[0].pk  # holds only its ID: tickets.services._default_team)
    elif prefetched is not None:
        first = min(prefetched, key=lambda team: (team.name, str(team.pk)), default=None)
        first_id = first.pk if first is not None else None
    else:
        first_id = ticket.teams.order_by("name").values_list("pk", flat=True).first()
    return first_id or ticket.license.default_team_id


def sender(*, license, team, short_id: str) -> tuple[str, list[str]]:
    """(From, Reply-To list) for mail of a ticket of `team`.

    From is the team's reply name and its reply address when that is verified, else the license's inbound
    address; an unverified reply address goes first into Reply-To so that answers still reach the customer's
    own mailbox (which forwards to us: the duplicate has the same Message-ID and is stored once). The
    signed ticket reply address is always in Reply-To: it is the threading path.
    """
    company = (license.settings or {}).get("companyName") or ""
    name = (team.reply_name if team else "") or company
    chosen = None
    if team is not None and team.reply_address_id:
        chosen = ReplyAddress.objects.for_license(license).filter(pk=team.reply_address_id).first()
    reply_to = [formataddr((name, reply_address(license.pk, short_id)))]
    if chosen is not None and chosen.verified:
        return formataddr((name or chosen.name, chosen.email)), reply_to
    if chosen is not None:
        reply_to.insert(0, formataddr((name or chosen.name, chosen.email)))
    return formataddr((name, license_address(license.pk))), reply_to


# Every write that mails asks for the license's own addresses: each process keeps them per license and version
# (helpdesk.versioned), dropped by any save or delete of a reply address or a mailbox. Issue 34: a statement less
# per mail queued in a write (bench/README.md "Issue 34: writes, continued").
_own_addresses = VersionedCopies("own-addresses")


def own_addresses_changed(sender, *, instance, **kwargs) -> None:
    """Receiver of ReplyAddress's and Mailbox's post_save and post_delete."""
    _own_addresses.changed(instance.license_id)


def _read_own_addresses(license_id) -> frozenset[str]:
    # a mailbox's support address comes back to us too (forwarded or fetched): one query for both lists
    addresses = ReplyAddress.objects.for_license(license_id).values_list("email", flat=True)
    mailboxes = Mailbox.objects.for_license(license_id).values_list("email", flat=True)
    return frozenset(address.lower() for address in addresses.union(mailboxes, all=True))


def recipients(ticket) -> list[str]:
    """The requester and the people in the loop, once each, never one of our own or the license's addresses
    (its reply addresses and mailboxes); at most MAIL_MAX_PEOPLE_IN_THE_LOOP people besides the requester (the
    rest get no mail, and no request renders more than that many)."""
    own = _own_addresses.get(ticket.license_id, lambda: _read_own_addresses(ticket.license_id))
    seen, result = set(), []
    for email in [ticket.requester_email, *(p.get("email", "") for p in ticket.people_in_the_loop or [])]:
        email = (email or "").strip()
        key = email.lower()
        if not email or key in seen or key in own or key.endswith("@" + inbound_domain()):
            continue
        seen.add(key)
        result.append(email)
        if len(result) > settings.MAIL_MAX_PEOPLE_IN_THE_LOOP:
            break
    return result


def new_message_id() -> str:
    return f"{uuid.uuid4().hex}@{inbound_domain()}"


# --- attachments --------------------------------------------------------------------------------------------


def attachment_link(attachment) -> str:
    """A signed, expiring link that opens the file from a mail client without credentials."""
    return signed_attachment_url(attachment)


# --- the body -----------------------------------------------------------------------------------------------


def _author(message) -> str:
    if message.author_type == "agent" and message.author_agent_id:
        return message.author_agent.name or message.author_agent.email
    if message.author_type == "client":
        return message.ticket.requester_name or message.ticket.requester_email
    return (message.ticket.license.settings or {}).get("companyName") or "HelpDesk"


def appendix(*, message, ticket, signature: str | None, thread: bool, files: bool = True) -> Rendered:
    """What goes below the template's body: the signature (when the template has no place for it), links to
    files too large to attach, and the earlier messages of the thread (newest first; `thread` False: none,
    also when the message is the ticket's first)."""
    text, markup = [], []
    if signature:
        text.append(signature)
        markup.append("<p>" + html_lib.escape(signature).replace("\n", "<br>") + "</p>")
    _, linked = split_attachments(message) if files else ([], [])
    if linked:
        lines = [f"- {a.name}: {attachment_link(a)}" for a in linked]
        text.append("Attachments:\n" + "\n".join(lines))
        items = "".join(
            f'<li><a href="{html_lib.escape(attachment_link(a))}">{html_lib.escape(a.name)}</a></li>'
            for a in linked
        )
        markup.append(f'<p class="attachments">Attachments:</p><ul>{items}</ul>')
    if thread:
        from tickets.models import Message

        earlier = (
            Message.objects.filter(ticket_id=ticket.pk, is_private=False)
            .exclude(pk=message.pk)
            .filter(created_at__lte=message.created_at)
            .select_related("author_agent", "ticket__license")
            .order_by("-created_at", "-id")[:THREAD_LENGTH]
        )
        for each in earlier:
            when = each.created_at.strftime("%Y-%m-%d %H:%M UTC")
            heading = f"On {when}, {_author(each)} wrote:"
            quoted = "\n".join(f"> {line}" for line in each.text.splitlines())
            text.append(f"{heading}\n{quoted}")
            body = html_lib.escape(each.text).replace("\n", "<br>")
            markup.append(
                f'<p class="thread-heading">{html_lib.escape(heading)}</p>'
                f'<blockquote class="thread" style="margin:0 0 0 8px;padding-left:8px;'
                f'border-left:2px solid #d0d7de">{body}</blockquote>'
            )
    return Rendered(text="\n\n".join(text), html="".join(markup))


def ticket_values(ticket) -> dict:
    """The ticket's placeholders, as they are when the mail is written (the worker renders them later)."""
    return {
        "ticket.subject": ticket.subject,
        "ticket.shortID": ticket.short_id,
        "requester.name": ticket.requester_name,
        "requester.email": ticket.requester_email,
    }


def render_ticket_mail(
    *, ticket, team, message, body: str, first: bool = False, files: bool = True, values: dict | None = None
) -> tuple[Rendered, list]:
    """The mail of `message` (or an acknowledgement `body`) in `team`'s template, else the license's.

    `first`: the message opened the ticket (no thread to quote). `files` False: no links to the message's
    files (an acknowledgement). `values`: the ticket's placeholders (`ticket_values`) when the mail was
    written; by default the ticket's now."""
    license = ticket.license
    template = (team.template if team and team.template_id else None) or license.default_template
    agent = message.author_agent if message.author_type == "agent" else None
    context = mail.license_context(
        license=license,
        agent=agent,
        **{**(values or ticket_values(ticket)), "message.text": body},
    )
    if template is None:
        content, type_ = {"text": "{{message.text}}"}, "visual"
    else:
        content, type_ = template.content, template.type
    placed = {
        *PLACEHOLDER_RE.findall(content.get("text") or ""),
        *PLACEHOLDER_RE.findall(content.get("html") or ""),
    }
    signature = agent.signature_text if agent and "agent.signature" not in placed else None
    thread = not first and bool((license.settings or {}).get("ticketThread", False))
    logo = mail.logo(template)
    rendered = render(
        type=type_,
        content=content,
        context=context,
        powered_by=mail.powered_by(license),
        logo_cid=mail.cid(logo) if logo else None,
        appendix=appendix(message=message, ticket=ticket, signature=signature, thread=thread, files=files),
    )
    return rendered, [logo] if logo else []


def subject_of(ticket, *, reply: bool) -> str:
    tag = f"[#{ticket.short_id}]"
    subject = ticket.subject if tag in ticket.subject else f"{ticket.subject} {tag}"
    return f"Re: {subject}" if reply else subject


# --- the receiver -------------------------------------------------------------------------------------------


def _queue(
    *, ticket, message, kind: str, to: list[str], subject: str, body: str, first: bool, extra_headers=None
):
    """`first`: the message opened the ticket, which has no earlier message to quote nor Message-ID to name.

    Decided here, in the message's transaction: the recipients, the subject, the Message-ID and the threading
    headers (the thread as it is now), the team that answers and the ticket's values; the worker renders the
    rest from them (`render_queued`)."""
    to_render = {
        "team": str(team_id) if (team_id := ticket_team_id(ticket)) else None,
        "first": first,
        "values": ticket_values(ticket),
        # an acknowledgement's text; a reply's is its message's
        "body": body if kind == OutboundMessage.KIND_ACKNOWLEDGEMENT else None,
    }
    rows = []
    for recipient in to:
        ids = [] if first else thread_ids(ticket=ticket, recipient=recipient)
        row = mail.message_queue(
            license=ticket.license,
            kind=kind,
            key=f"{kind}:{message.pk}:{recipient.lower()}",
            to=recipient,
            subject=subject,
            rendered=None,
            message_id=new_message_id(),
            ticket=ticket,
            ticket_message=message,
            headers={**threading_headers(ids), **(extra_headers or {})},
            to_render=to_render,
            fresh=True,  # the key names a message created in this transaction
        )
        rows.append(row)
    return rows


def render_queued(row: OutboundMessage) -> None:
    """In the worker, before the row's first send: render its mail as `_queue` decided it, and store it.

    The team's template (else the license's), the agent's name and signature, the thread below a reply, links
    to files too large to attach, From and Reply-To (`sender`): the same mail as when it was rendered in the
    request (tests/test_mail_out.py compares them). Stored with the claim's attempt, so a retry (or a worker
    that takes an expired claim over) sends what was rendered, not a new rendering."""
    spec = row.to_render
    ticket, message = row.ticket, row.ticket_message
    team = Team.objects.select_related("template").filter(pk=spec["team"]).first() if spec["team"] else None
    # an acknowledgement never carries (nor links) the received mail's files: anyone could relay a file
    # through the team's identity to any address named as the requester
    acknowledgement = row.kind == OutboundMessage.KIND_ACKNOWLEDGEMENT
    rendered, inline = render_ticket_mail(
        ticket=ticket,
        team=team,
        message=message,
        body=message.text if spec["body"] is None else spec["body"],
        first=spec["first"],
        files=not acknowledgement,
        values=spec["values"],
    )
    store_rendering(row, rendered, inline, license=ticket.license, team=team)


def store_rendering(row, rendered, inline, *, license, team) -> None:
    """The worker's rendering of a queued row (`to_render`), stored before its first send: the body, the team's
    From and Reply-To, the inline images."""
    from_email, reply_to = sender(
        license=license, team=team, short_id=row.to_render["values"]["ticket.shortID"]
    )
    row.text, row.html, row.from_email = rendered.text, rendered.html, from_email
    row.headers = {"Reply-To": reply_to, **row.headers}
    row.to_render = None
    row.save(update_fields=["text", "html", "from_email", "headers", "to_render"])
    if inline:
        row.attachments.set(inline)


def on_message_created(sender, *, message, ticket, created_ticket: bool = False, **kwargs) -> None:
    """Receiver of `tickets.signals.message_created`; runs in the message's transaction."""
    if message.is_private or ticket.silo in ("spam", "trash"):
        return
    if message.author_type == "agent":
        rows = _queue(
            ticket=ticket,
            message=message,
            kind=OutboundMessage.KIND_REPLY,
            to=recipients(ticket),
            subject=subject_of(ticket, reply=not created_ticket),
            body=message.text,
            first=created_ticket,
        )
        record_queued(message, rows)


def acknowledgement_queue(*, ticket, message, received_message_id: str) -> list[OutboundMessage]:
    """The acknowledgement of a ticket that came by mail, to its requester, threaded to the received mail.

    Called by the inbound service once it has decided that the mail may be answered automatically (loops,
    bulk mail, spam, the per-sender limit: templates_app.inbound.services), in the ticket's transaction."""
    company = (ticket.license.settings or {}).get("companyName") or "our team"
    body = (
        f"Thank you for your message. We received your request and {company} will answer soon.\n\n"
        f"Your ticket number is #{ticket.short_id}; keep it in the subject when you write about it."
    )
    return _queue(
        ticket=ticket,
        message=message,
        kind=OutboundMessage.KIND_ACKNOWLEDGEMENT,
        to=[ticket.requester_email],
        subject=subject_of(ticket, reply=True),
        body=body,
        first=True,
        # RFC 3834: an automatic answer, never to be answered automatically.
        extra_headers={
            "Auto-Submitted": "auto-replied",
            **threading_headers([received_message_id.strip("<>")] if received_message_id else []),
        },
    )


def on_tickets_purging(sender, *, license_id: int, ticket_ids: list, **kwargs) -> None:
    """Receiver of `tickets.signals.tickets_purging`: the mail rows of purged tickets go with them."""
    outbound = OutboundMessage.objects.filter(license_id=license_id, ticket_id__in=ticket_ids)
    through = OutboundMessage.attachments.through.objects.filter(outboundmessage_id__in=outbound.values("id"))
    through._raw_delete(through.db)
    outbound._raw_delete(outbound.db)
