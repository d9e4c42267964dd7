"""Forwarding: each license receives mail at its own inbound address; the owner forwards the team's mailbox there."""

from __future__ import annotations

import uuid

from django.conf import settings

from helpdesk.transactions import unit_of_work
from templates_app import mail
from templates_app.models import OutboundMessage


def license_inbound_address(license) -> str:
    return f"{license.pk}@inbound.{settings.HELPDESK_INBOUND_DOMAIN}"


INSTRUCTIONS = """To receive your customers' e-mails as tickets, forward your support mailbox to:

{address}

1. Open the settings of the mailbox your customers write to (for example support@yourcompany.com).
2. Add a forwarding address and enter {address}.
3. Confirm the forwarding if your provider sends a confirmation e-mail (it arrives as a ticket).
4. Keep a copy in the mailbox if you like; every forwarded e-mail becomes a ticket for your default team.

Gmail: Settings > See all settings > Forwarding and POP/IMAP > Add a forwarding address.
Outlook / Microsoft 365: Settings > Mail > Forwarding > Enable forwarding.
Other providers: look for "forwarding" or "redirect" in the mailbox settings."""


@unit_of_work
def forwarding_instructions_send(*, license, email: str, agent=None, request_key: str | None = None) -> str:
    """E-mail the forwarding instructions (made from the license's default template); the confirmation string."""
    address = license_inbound_address(license)
    mail.license_mail_queue(
        license=license,
        kind=OutboundMessage.KIND_FORWARDING,
        key=f"forwarding:{request_key or uuid.uuid4().hex}:{email}",
        to=email,
        subject="How to forward your support e-mail to HelpDesk",
        body=INSTRUCTIONS.format(address=address),
        agent=agent,
        **{"requester.email": email},
    )
    return f"Forwarding instructions sent to {email}."
