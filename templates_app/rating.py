"""Rating requests: when a ticket is solved the first time, the requester gets one e-mail, a reply in the ticket's
thread (In-Reply-To, References), with two signed links (good, bad) to the public page /ratings, where they may
add a comment and submit (tickets.services.ticket_rate writes the rating and its `rating` event).

The links carry the ticket's ID and the score, signed (salted, timestamped, HELPDESK_RATING_LINK_MAX_AGE_DAYS);
a link opened again shows the page again and a second submit changes the answer: a ticket has one rating.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.core import signing

from templates_app import mail
from templates_app.models import OutboundMessage

KIND = "rating"
SALT = "helpdesk.ticket-rating"
SCORES = ("good", "bad")


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=SALT)


def token(ticket, score: str) -> str:
    return _signer().sign_object({"t": str(ticket.pk), "s": score})


def link(ticket, score: str) -> str:
    return f"{settings.HELPDESK_APP_URL.rstrip('/')}/ratings?{urlencode({'token': token(ticket, score)})}"


def read_token(value: str) -> tuple[str, str] | None:
    """(ticket ID, score) of a valid link's token, else None (forged, damaged or expired)."""
    try:
        data = _signer().unsign_object(value, max_age=settings.HELPDESK_RATING_LINK_MAX_AGE_DAYS * 86400)
    except (signing.BadSignature, TypeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("s") not in SCORES or not data.get("t"):
        return None
    return str(data["t"]), data["s"]


def on_rating_requested(sender, *, ticket, asked_at=None, **kwargs) -> OutboundMessage | None:
    """Receiver of tickets.signals.rating_requested (in the transaction that solves the ticket, or that asks now:
    `asked_at`, POST /v1/tickets/{ID}/ratingRequests, one e-mail per ticket and hour however often asked).

    Decided here: the recipient, the subject, the Message-ID, the thread, the body with its signed links, the team
    that answers and the ticket's values; the worker renders the mail from them (`render_queued`), as it renders
    a reply's. Issue 34: a solve no longer reads the team's template and the logo nor renders in the request
    (bench/README.md "Issue 34: writes, continued")."""
    from templates_app import ticket_delivery, ticket_mail

    if ticket.silo != "tickets" or not ticket.requester_email:
        return None
    company = (ticket.license.settings or {}).get("companyName") or "our team"
    body = (
        f"Your request #{ticket.short_id} ({ticket.subject}) is solved. How did {company} do?\n\n"
        f"Good: {link(ticket, 'good')}\n\nBad: {link(ticket, 'bad')}\n\n"
        "You can add a comment on the page the link opens. Thank you!"
    )
    team_id = ticket_mail.ticket_team_id(ticket)
    # A reply in the ticket's thread (the mails received and those sent to the requester), not a new one.
    thread = ticket_delivery.threading_headers(
        ticket_delivery.thread_ids(ticket=ticket, recipient=ticket.requester_email)
    )
    return mail.message_queue(
        license=ticket.license,
        kind=KIND,
        # the first solve's: once per ticket, whatever happens to the flag
        key=f"{KIND}:{ticket.pk}" if asked_at is None else f"{KIND}:{ticket.pk}:{asked_at:%Y%m%d%H}",
        to=ticket.requester_email,
        subject=f"How did we do? {ticket_mail.subject_of(ticket, reply=True)}",
        rendered=None,
        message_id=ticket_mail.new_message_id(),
        ticket=ticket,
        headers={"Auto-Submitted": "auto-generated", **thread},
        to_render={
            "team": str(team_id) if team_id else None,
            "values": {
                "ticket.subject": ticket.subject,
                "ticket.shortID": ticket.short_id,
                "requester.name": ticket.requester_name,
                "requester.email": ticket.requester_email,
            },
            "body": body,
        },
    )


def render_queued(row: OutboundMessage) -> None:
    """In the worker, before the row's first send: the rating request's mail as `on_rating_requested` decided it
    (the team's template, else the license's; From and Reply-To), stored with the claim's attempt, as a reply's
    (templates_app.ticket_mail.render_queued)."""
    from accounts.models import Team
    from templates_app import ticket_mail

    spec = row.to_render
    license = row.license
    team = Team.objects.select_related("template").filter(pk=spec["team"]).first() if spec["team"] else None
    context = mail.license_context(license=license, **spec["values"], **{"message.text": spec["body"]})
    template = team.template if team is not None and team.template_id else None
    rendered, inline = mail.render_for_license(license=license, context=context, template=template)
    ticket_mail.store_rendering(row, rendered, inline, license=license, team=team)
