"""Blocked and trusted senders (`/v1/blockedEmails`, `/v1/trustedEmails`): an address or a whole `@domain`.

Mail in reads them (templates_app.inbound): a blocked sender's new tickets go to `spam`; a trusted sender's mail
is never marked spam, whatever its `X-Spam-Flag` says, unless the same sender is blocked too."""

from __future__ import annotations

from accounts.models import License
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import field_error
from helpdesk.transactions import unit_of_work
from templates_app.models import BlockedSender, TrustedSender


def normalized(email: str) -> str:
    """`jo@example.com` or `@example.com`, lower case; anything else is a 400 naming `email`."""
    value = (email or "").strip().lower()
    local, at, domain = value.rpartition("@")
    if not at or not domain or "." not in domain or " " in value or local.count("@") or len(value) > 254:
        raise field_error("email", "An address (jo@example.com) or a domain (@example.com).")
    if domain.startswith(".") or domain.endswith(".") or ".." in domain:
        raise field_error("email", "An address (jo@example.com) or a domain (@example.com).")
    return value


def _save(model, *, license: License, email: str, instance=None, what: str):
    email = normalized(email)
    taken = model.objects.filter(license=license, email__iexact=email)
    if instance is not None:
        taken = taken.exclude(pk=instance.pk)
    if taken.exists():
        raise field_error("email", f"This sender is already {what}.", code="unique")
    if instance is None:
        instance = model(license=license, email=email)
        stamp_create(instance)
    else:
        instance.email = email
        stamp_update(instance)
    instance.save()
    return instance


@unit_of_work
def blocked_sender_create(*, license: License, email: str) -> BlockedSender:
    return _save(BlockedSender, license=license, email=email, what="blocked")


@unit_of_work
def blocked_sender_update(*, blocked: BlockedSender, email: str | None = None) -> BlockedSender:
    if email is None:
        return blocked
    return _save(BlockedSender, license=blocked.license, email=email, instance=blocked, what="blocked")


@unit_of_work
def blocked_sender_delete(*, blocked: BlockedSender) -> None:
    blocked.delete()


@unit_of_work
def trusted_sender_create(*, license: License, email: str) -> TrustedSender:
    return _save(TrustedSender, license=license, email=email, what="trusted")


@unit_of_work
def trusted_sender_update(*, trusted: TrustedSender, email: str | None = None) -> TrustedSender:
    if email is None:
        return trusted
    return _save(TrustedSender, license=trusted.license, email=email, instance=trusted, what="trusted")


@unit_of_work
def trusted_sender_delete(*, trusted: TrustedSender) -> None:
    trusted.delete()
