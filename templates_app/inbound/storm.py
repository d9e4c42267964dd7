"""Whether a new ticket by mail gets its acknowledgement: the mail's own signals (RFC 3834 and the common vendor
headers that mark an automatic or bulk message) and the storm limits, per sender, per sender domain and per
license, counted in the database over the last hour.

One function, `auto_reply_refusal`, called where the decision is taken; it returns why not, or "".
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Q

from accounts.models import License
from templates_app.inbound import parse
from templates_app.models import InboundMessage

BULK_PRECEDENCE = {"bulk", "list", "junk", "auto_reply"}


def _automatic(mail: parse.ParsedMail, envelope_sender: str | None) -> str:
    """The header that marks `mail` as automatic (never to be answered automatically), or ""."""
    if mail.auto_submitted and mail.auto_submitted != "no":
        return f"Auto-Submitted: {mail.auto_submitted}"
    if mail.precedence in BULK_PRECEDENCE:
        return f"Precedence: {mail.precedence}"
    if envelope_sender == "" or mail.return_path == "":
        return "null return path (an automatic message)"
    for name, value in mail.automatic_headers.items():
        return f"{name}: {value}"[:120]
    return ""


def automatic_refusal(*, mail: parse.ParsedMail, envelope_sender: str | None) -> str:
    """Why no automatic answer may answer `mail` by its own headers alone (an auto-reply, bulk mail, a null
    return path), or "": the inbound service marks its ticket message with it, so that no rule answers it."""
    automatic = _automatic(mail, envelope_sender)
    return f"no auto-reply: {automatic}" if automatic else ""


def _limit_reached(license: License, sender: str, now) -> str:
    """The first of the hourly limits that the acknowledgements already sent reach, or "".

    One statement counts all three over the license's last hour (index license, created_at; at most the
    license limit of rows are acknowledged ones). Exact under concurrency: it runs after ticket_create, which
    holds the license's ticket-number row lock until commit, so two new tickets of one license are decided
    one after the other, each seeing the other's committed row (READ COMMITTED: a fresh snapshot per
    statement)."""
    domain = sender.rpartition("@")[2]
    counts = InboundMessage.objects.filter(
        license=license, auto_reply_allowed=True, created_at__gte=now - timedelta(hours=1)
    ).aggregate(
        to_sender=Count("pk", filter=Q(sender=sender)),
        to_domain=Count("pk", filter=Q(sender__endswith="@" + domain)),
        in_license=Count("pk"),
    )
    limits = [
        (settings.INBOUND_AUTO_REPLIES_PER_HOUR, counts["to_sender"], f"to {sender}"),
        (settings.INBOUND_AUTO_REPLIES_PER_DOMAIN_PER_HOUR, counts["to_domain"], f"to @{domain}"),
        (settings.INBOUND_AUTO_REPLIES_PER_LICENSE_PER_HOUR, counts["in_license"], "by this help desk"),
    ]
    for most, sent, whom in limits:
        if most and sent >= most:
            return f"more than {most} {whom} this hour"
    return ""


def auto_reply_refusal(
    *,
    license: License,
    mail: parse.ParsedMail,
    envelope_sender: str | None,
    sender: str,
    now,
    blocked: bool = False,
) -> str:
    """Why the acknowledgement of this new ticket must not be sent (for the InboundMessage's note), or ""."""
    automatic = _automatic(mail, envelope_sender)
    if automatic:
        return f"no auto-reply: {automatic}"
    if mail.spam_flag:
        return "no auto-reply: spam"
    if blocked:
        return "no auto-reply: blocked sender"
    reached = _limit_reached(license, sender, now)
    return f"no auto-reply: {reached}" if reached else ""
