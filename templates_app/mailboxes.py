"""Mailboxes (`/v1/mailboxes`): the customer's support addresses, each with its own inbound address and team, and
optionally an IMAP account that beat polls (templates_app/inbound/imap.py).

The IMAP settings arrive as one object (`imap`: host, port, security, username, password, folder) or None (no
polling). The password is write-only: an `imap` object without one keeps the stored password. A change of the
server, the account or the folder forgets the UIDs read so far (the Message-IDs already stored still keep a
message from being stored twice); any change of `imap` or a switch back to `active` polls again at once.
"""

from __future__ import annotations

from accounts.models import License, Team
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import field_error
from helpdesk.transactions import unit_of_work
from templates_app.addresses import inbound_domain
from templates_app.models import Mailbox, MailboxState, ReplyAddress
from templates_app.models_mailbox import SECURITY_SSL

DEFAULT_PORTS = {SECURITY_SSL: 993, "starttls": 143}
_WHERE = ("imap_host", "imap_port", "imap_username", "imap_folder")  # a new place: its UIDs are another's


def _check_email(license: License, email: str, mailbox: Mailbox | None) -> str:
    email = email.strip()
    domain = inbound_domain()
    if email.lower().endswith("@" + domain) or email.lower().endswith("." + domain):
        raise field_error("email", "Our own inbound addresses cannot be a mailbox's address.")
    taken = Mailbox.objects.for_license(license).filter(email__iexact=email)
    if mailbox is not None:
        taken = taken.exclude(pk=mailbox.pk)
    if taken.exists():
        raise field_error("email", "Another mailbox has this address.", code="unique")
    return email


def _apply_imap(mailbox: Mailbox, imap: dict | None) -> None:
    if imap is None:
        mailbox.imap_host = mailbox.imap_security = mailbox.imap_username = ""
        mailbox.imap_password = mailbox.imap_folder = ""
        mailbox.imap_port = None
        return
    password = imap.get("password") or (mailbox.imap_password if mailbox.imap_host else "")
    if not password:
        raise field_error("imap", "'password' is required when the IMAP settings are new.")
    security = imap["security"]
    mailbox.imap_host = imap["host"].strip()
    mailbox.imap_security = security
    mailbox.imap_port = imap.get("port") or DEFAULT_PORTS[security]
    mailbox.imap_username = imap["username"]
    mailbox.imap_password = password
    mailbox.imap_folder = imap.get("folder") or "INBOX"


def _reset_state(mailbox: Mailbox, *, moved: bool) -> None:
    """Poll again at once; a mailbox whose server, account or folder changed starts from that folder's start."""
    state, _ = MailboxState.objects.get_or_create(mailbox=mailbox)
    state.failing, state.failures, state.owners_notified = False, 0, False
    state.last_error, state.next_poll_at = "", None
    if moved:
        state.uid_validity, state.last_uid = None, 0
    state.save()


@unit_of_work
def mailbox_create(
    *,
    license: License,
    name: str,
    email: str,
    team: Team | None = None,
    reply_address: ReplyAddress | None = None,
    imap: dict | None = None,
    status: str = "active",
) -> Mailbox:
    mailbox = Mailbox(
        license=license,
        name=name,
        email=_check_email(license, email, None),
        team=team or license.default_team,
        reply_address=reply_address,
        disabled=status == "disabled",
    )
    _apply_imap(mailbox, imap)
    stamp_create(mailbox)
    mailbox.save()
    MailboxState.objects.create(mailbox=mailbox)
    return mailbox


_UNSET = object()


@unit_of_work
def mailbox_update(
    *,
    mailbox: Mailbox,
    name: str | None = None,
    email: str | None = None,
    team: Team | None = None,
    reply_address=_UNSET,
    imap=_UNSET,
    status: str | None = None,
) -> Mailbox:
    mailbox = Mailbox.objects.select_for_update(no_key=True).get(pk=mailbox.pk)
    before = {field: getattr(mailbox, field) for field in _WHERE}
    was_polling = mailbox.polls
    if name is not None:
        mailbox.name = name
    if email is not None:
        mailbox.email = _check_email(mailbox.license, email, mailbox)
    if team is not None:
        mailbox.team = team
    if reply_address is not _UNSET:
        mailbox.reply_address = reply_address
    if status is not None:
        mailbox.disabled = status == "disabled"
    if imap is not _UNSET:
        _apply_imap(mailbox, imap)
    stamp_update(mailbox)
    mailbox.save()
    moved = any(getattr(mailbox, field) != value for field, value in before.items())
    if imap is not _UNSET or (mailbox.polls and not was_polling):
        _reset_state(mailbox, moved=moved)
    return mailbox


@unit_of_work
def mailbox_delete(*, mailbox: Mailbox) -> None:
    mailbox.delete()
