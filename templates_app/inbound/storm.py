"""Whether a new ticket by mail gets its acknowledgement: the mail's own signals (RFC 3834 and the common vendor
headers that mark an automatic or bulk message) and the storm limits, per sender, per sender domain and per
license, counted in the database over the last hour.

One function, `auto_reply_refusal`, called where the decision is taken; it returns why not, or "".
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection

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
    statement).

    Written as SQL: the ORM's aggregate with three filtered counts cost 2.9 M interpreter instructions per mail
    to compile (bench/mail_in.py --instructions, 36.2 M -> 33.3 M). The domain's LIKE pattern and the time are
    prepared by the backend's operations as the ORM's `endswith` and `gte` prepare them."""
    domain = sender.rpartition("@")[2]
    pattern, since = "%@" + connection.ops.prep_for_like_query(domain), now - timedelta(hours=1)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COALESCE(SUM(CASE WHEN sender = %s THEN 1 ELSE 0 END), 0),"
            " COALESCE(SUM(CASE WHEN sender LIKE %s ESCAPE '\\' THEN 1 ELSE 0 END), 0), COUNT(*)"
            f" FROM {InboundMessage._meta.db_table}"
            " WHERE license_id = %s AND auto_reply_allowed AND created_at >= %s",
            [sender, pattern, license.pk, connection.ops.adapt_datetimefield_value(since)],
        )
        to_sender, to_domain, in_license = cursor.fetchone()
    limits = [
        (settings.INBOUND_AUTO_REPLIES_PER_HOUR, to_sender, f"to {sender}"),
        (settings.INBOUND_AUTO_REPLIES_PER_DOMAIN_PER_HOUR, to_domain, f"to @{domain}"),
        (settings.INBOUND_AUTO_REPLIES_PER_LICENSE_PER_HOUR, in_license, "by this help desk"),
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
