"""Reply addresses: an address of the customer's own domain that a team's mail is sent from once verified.

Adding one e-mails a signed, expiring link to that address (the row's ID, TimestampSigner with its own
salt); the link opens a page whose button (a POST) verifies the address. Only verified addresses are used
as From; see `ticket_mail.sender`.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

from django.conf import settings
from django.core import signing
from django.utils import timezone

from accounts.models import License, Team
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import Invalid, field_error
from helpdesk.transactions import unit_of_work
from templates_app import mail
from templates_app.addresses import inbound_domain
from templates_app.models import OutboundMessage, ReplyAddress

SALT = "helpdesk.reply-address"


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=SALT)


def verification_token(address: ReplyAddress) -> str:
    return _signer().sign(str(address.pk))


def verification_url(address: ReplyAddress) -> str:
    base = settings.HELPDESK_APP_URL.rstrip("/")
    return f"{base}/replyAddresses/verify?token={quote(verification_token(address))}"


def _send_confirmation(address: ReplyAddress) -> None:
    license = address.license
    company = (license.settings or {}).get("companyName") or "your team"
    days = settings.HELPDESK_REPLY_ADDRESS_LINK_MAX_AGE_DAYS
    body = (
        f"{company} wants to send its help-desk replies from {address.email}.\n\n"
        f"Confirm that this address may be used: {verification_url(address)}\n\n"
        f"The link expires in {days} day{'s' if days != 1 else ''}. If you did not expect this, ignore this e-mail."
    )
    mail.license_mail_queue(
        license=license,
        kind=OutboundMessage.KIND_REPLY_ADDRESS,
        key=f"replyAddress:{address.pk}:{timezone.now().timestamp()}",
        to=address.email,
        subject=f"Confirm {address.email} as a reply address of {company}",
        body=body,
    )


@unit_of_work
def reply_address_create(*, license: License, email: str, name: str = "") -> ReplyAddress:
    email = email.strip()
    if email.lower().endswith("@" + inbound_domain()) or email.lower().endswith("." + inbound_domain()):
        raise field_error("email", "Our own inbound addresses cannot be reply addresses.")
    if ReplyAddress.objects.for_license(license).filter(email__iexact=email).exists():
        raise field_error("email", "This address is already a reply address.", code="unique")
    address = ReplyAddress(license=license, email=email, name=name)
    stamp_create(address)
    address.save()
    _send_confirmation(address)
    return address


@unit_of_work
def reply_address_delete(*, address: ReplyAddress) -> None:
    """Teams that used it fall back to the inbound address."""
    for team in Team.objects.for_license(address.license_id).filter(reply_address_id=address.pk):
        from accounts import services as accounts_services

        accounts_services.team_update(team=team, reply_address_id=None)
    address.delete()


def _invalid() -> Invalid:
    return Invalid(
        "This confirmation link is not valid.",
        code="reply_address_link_invalid",
        details={"token": ["Not a valid link."]},
    )


def address_from_token(token: str) -> ReplyAddress:
    """The address a link names (signature and age checked), or a 400."""
    signer = _signer()
    try:
        address_id = signer.unsign(
            token, max_age=timedelta(days=settings.HELPDESK_REPLY_ADDRESS_LINK_MAX_AGE_DAYS)
        )
    except signing.SignatureExpired:
        raise Invalid(
            "This confirmation link has expired; add the address again.", code="reply_address_link_expired"
        ) from None
    except signing.BadSignature:
        raise _invalid() from None
    address = ReplyAddress.objects.select_related("license").filter(pk=address_id).first()
    if address is None:
        raise _invalid()
    return address


@unit_of_work
def reply_address_verify(*, token: str) -> ReplyAddress:
    address = address_from_token(token)
    address = (
        ReplyAddress.objects.select_for_update(no_key=True, of=("self",))
        .select_related("license")
        .get(pk=address.pk)
    )
    if address.verified_at is None:
        address.verified_at = timezone.now()
        stamp_update(address)
        address.save(update_fields=["verified_at", "updated_at", "updated_by"])
    return address


def on_team_reply_address_chosen(sender, *, license, reply_address_id, **kwargs) -> None:
    """Receiver of accounts.signals.team_reply_address_chosen."""
    check_team_reply_address(license, reply_address_id)


def check_team_reply_address(license, reply_address_id) -> None:
    """A team's replyAddressID names one of its license's reply addresses (or is null)."""
    if reply_address_id is None:
        return
    if not ReplyAddress.objects.for_license(license).filter(pk=reply_address_id).exists():
        raise field_error("replyAddressID", f"'{reply_address_id}' does not exist in this license.")
