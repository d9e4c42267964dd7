"""The inbound addresses of a license, and the signed reply address of a ticket.

- `<licenseID>@inbound.<domain>`: the license (its default team);
- `<licenseID>+<teamID-prefix>@inbound.<domain>`: a team of the license (a hex prefix of the team's UUID);
- `<licenseID>+m<mailboxID>@inbound.<domain>`: a mailbox of the license (its UUID's 32 hex digits): mail there
  lands in the mailbox's team;
- `<licenseID>+t<shortID>.<sig>@inbound.<domain>`: a ticket's reply address, written into Reply-To of the mail
  we send; the signature proves that we handed it out, so a reply to it threads even when the subject tag and
  the References header were lost.

The forms cannot be confused: a team prefix is hexadecimal, and neither `t` nor `m` is a hex digit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re

from django.conf import settings

_SALT = b"helpdesk.reply-address"
_SIG_LENGTH = 10
_LOCAL = re.compile(
    r"^(?P<license>\d{1,18})(?:\+(?:t(?P<short>[0-9A-Za-z]{1,20})\.(?P<sig>[0-9a-f]+)|m(?P<mailbox>[0-9a-f]{32})"
    r"|(?P<team>[0-9a-f]{4,32})))?$"
)


@dataclasses.dataclass(frozen=True)
class InboundAddress:
    license_id: int
    short_id: str | None = None  # a ticket's reply address (signature checked)
    team_prefix: str | None = None  # a team's address
    mailbox_id: str | None = None  # a mailbox's address (32 hex digits)


def inbound_domain() -> str:
    return f"inbound.{settings.HELPDESK_INBOUND_DOMAIN}".lower()


def _signature(license_id: int, short_id: str) -> str:
    key = hashlib.sha256(_SALT + settings.SECRET_KEY.encode()).digest()
    return hmac.new(key, f"{license_id}:{short_id}".encode(), hashlib.sha256).hexdigest()[:_SIG_LENGTH]


def license_address(license_id: int) -> str:
    return f"{license_id}@{inbound_domain()}"


def team_address(license_id: int, team_id) -> str:
    return f"{license_id}+{str(team_id).replace('-', '')[:8]}@{inbound_domain()}"


def mailbox_address(license_id: int, mailbox_id) -> str:
    return f"{license_id}+m{str(mailbox_id).replace('-', '')}@{inbound_domain()}"


def reply_address(license_id: int, short_id: str) -> str:
    return f"{license_id}+t{short_id}.{_signature(license_id, short_id)}@{inbound_domain()}"


def parse_inbound_address(address: str) -> InboundAddress | None:
    """The license (and team or ticket) an address of our inbound domain names; None for any other address
    or a reply address whose signature does not verify."""
    local, _, domain = address.strip().strip("<>").rpartition("@")
    if domain.lower() != inbound_domain():
        return None
    match = _LOCAL.match(local)
    if match is None:
        return None
    license_id = int(match["license"])
    if match["short"] is not None:
        if not hmac.compare_digest(match["sig"], _signature(license_id, match["short"])):
            return None
        return InboundAddress(license_id, short_id=match["short"])
    if match["mailbox"] is not None:
        return InboundAddress(license_id, mailbox_id=match["mailbox"])
    return InboundAddress(license_id, team_prefix=match["team"])
