"""Whether a new ticket by mail gets its acknowledgement: the mail's own signals (RFC 3834 and the common vendor
headers that mark an automatic or bulk message) and the storm limits, per sender, per sender domain and per
license, counted in the database over the last hour.

One function, `auto_reply_refusal`, called where the decision is taken; it returns why not, or "".

Exact under concurrency without making a license's new tickets by mail wait for each other's commit (issue 34:
bench/README.md "seventh round"). The decision counts the acknowledgements committed so far, without a lock,
with the mail's other look-ups (selectors.lookups), and the mail's write goes on with it; an acknowledgement
allowed so is confirmed at the very end of the write (`before_commit(last=True)`, registered after the ticket
was created) by counting again. By then the write has raised the license's search generation, which locks its
row until the commit (tickets/totals: every write of a license's tickets does, last of its locks), so two
confirmations of a license are made one after the other and the second counts the first's acknowledgement (a
statement's snapshot is taken when it starts: after the lock was granted). If a limit is now reached, the write
rolls back (`DecisionChanged`) and the mail is stored again, refused this time
(templates_app.inbound.services._store). A refusal needs no confirmation: the hour's counts only grow. On
SQLite the count is made inside the mail's unit of work, which holds the database's write lock from its start
(`count_ahead`): it is already the serial one.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection

from accounts.models import License
from helpdesk.transactions import before_commit
from templates_app.inbound import parse
from templates_app.models import InboundMessage

BULK_PRECEDENCE = {"bulk", "list", "junk", "auto_reply"}
# A mail is written at most twice: the second time refused for the limit its confirmation found reached.
ATTEMPTS = 2


class DecisionChanged(Exception):
    """An acknowledgement allowed by the count without lock: a limit was reached meanwhile (`_confirm`)."""

    def __init__(self, reached: str):
        super().__init__(reached)
        self.reached = reached


def count_ahead(sender: str, now) -> tuple | None:
    """What the mail's look-ups count before its unit of work (templates_app.inbound.selectors.lookups:
    (sender, now)), or None: on SQLite the count stays in the unit, which holds the database's write lock from
    its start (`transaction_mode` IMMEDIATE): there it is the serial count, and no confirmation follows."""
    return (sender, now) if connection.vendor == "postgresql" else None


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


def counting(license_id: int, sender: str, now, *, other_than=None) -> tuple[str, list]:
    """The statement (SQL, parameters) that counts the acknowledgements of the license's last hour: to the
    sender, to its domain, in all (`other_than`: leaving out the mail's own row, inserted by the time it is
    confirmed). templates_app.inbound.selectors.lookups reads it with the mail's other look-ups.

    One statement counts all three over the license's last hour (the partial index of the acknowledged mail,
    `inbound_license_acknowledged`: at most the limits' rows, not every mail of the hour). Written as SQL: the
    ORM's aggregate with three filtered counts cost 2.9 M interpreter instructions per mail to compile
    (bench/mail_in.py --instructions, 36.2 M -> 33.3 M). The domain's LIKE pattern and the time are prepared by
    the backend's operations as the ORM's `endswith` and `gte` prepare them."""
    domain = sender.rpartition("@")[2]
    pattern, since = "%@" + connection.ops.prep_for_like_query(domain), now - timedelta(hours=1)
    sql = (
        "SELECT COALESCE(SUM(CASE WHEN sender = %s THEN 1 ELSE 0 END), 0),"
        " COALESCE(SUM(CASE WHEN sender LIKE %s ESCAPE '\\' THEN 1 ELSE 0 END), 0), COUNT(*)"
        f" FROM {InboundMessage._meta.db_table}"
        " WHERE license_id = %s AND auto_reply_allowed AND created_at >= %s"
    )
    params = [sender, pattern, license_id, connection.ops.adapt_datetimefield_value(since)]
    if other_than is not None:
        sql, params = sql + " AND id <> %s", [*params, other_than]
    return sql, params


def _limit_reached(license: License, sender: str, now, counted=None, *, other_than=None) -> str:
    """The first of the hourly limits that the acknowledgements already sent reach, or "" (`counted`: the
    counts when already read, else read here)."""
    if counted is None:
        with connection.cursor() as cursor:
            cursor.execute(*counting(license.pk, sender, now, other_than=other_than))
            counted = cursor.fetchone()
    to_sender, to_domain, in_license = counted
    domain = sender.rpartition("@")[2]
    limits = [
        (settings.INBOUND_AUTO_REPLIES_PER_HOUR, to_sender, f"to {sender}"),
        (settings.INBOUND_AUTO_REPLIES_PER_DOMAIN_PER_HOUR, to_domain, f"to @{domain}"),
        (settings.INBOUND_AUTO_REPLIES_PER_LICENSE_PER_HOUR, in_license, "by this help desk"),
    ]
    for most, sent, whom in limits:
        if most and sent >= most:
            return f"more than {most} {whom} this hour"
    return ""


def _confirm(license: License, sender: str, now, inbound_id) -> None:
    """The acknowledgement allowed without lock, counted again under the license's search generation row lock.

    The generation's lock, not one of its own: an advisory lock here cost a statement per new ticket (mail in
    15.10 -> 14.91 M instructions, bench/README.md "seventh round") for a wait the generation already imposes.
    tests/test_mail_inbound.py holds a confirmation and checks that the next one waits for its commit."""
    reached = _limit_reached(license, sender, now, other_than=inbound_id)
    if reached:
        raise DecisionChanged(reached)


def auto_reply_refusal(
    *,
    license: License,
    mail: parse.ParsedMail,
    envelope_sender: str | None,
    sender: str,
    now,
    blocked: bool = False,
    inbound_id=None,
    counted=None,
) -> str:
    """Why the acknowledgement of this new ticket must not be sent (for the InboundMessage's note), or "".

    Called in the mail's unit of work: an acknowledgement allowed is confirmed before its commit, on PostgreSQL
    (the module's docstring); `inbound_id`: the mail's row, inserted by then. `counted`: the counts of the
    acknowledgements (`counting`) read before the unit with the mail's other look-ups, if they were; or, when
    the mail is written again after its confirmation failed, the limit that it found reached."""
    automatic = _automatic(mail, envelope_sender)
    if automatic:
        return f"no auto-reply: {automatic}"
    if mail.spam_flag:
        return "no auto-reply: spam"
    if blocked:
        return "no auto-reply: blocked sender"
    if isinstance(counted, str):  # the limit a failed confirmation found reached: no count, no confirmation
        return f"no auto-reply: {counted}"
    reached = _limit_reached(license, sender, now, counted)
    if reached:
        return f"no auto-reply: {reached}"
    if connection.vendor == "postgresql":
        before_commit(lambda: _confirm(license, sender, now, inbound_id), last=True)
    return ""
