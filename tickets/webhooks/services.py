"""Webhook writes (owners, through the API). The secret is generated unless given and shown only once."""

from __future__ import annotations

import secrets

from accounts.models import License
from accounts.services import stamp_create, stamp_update
from helpdesk.errors import field_error
from helpdesk.transactions import unit_of_work
from tickets.webhooks import guard
from tickets.webhooks.models import STATUS_ACTIVE, Webhook

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def _check_url(url: str) -> None:
    try:
        guard.check(url)
    except guard.UnsafeURL as exc:
        raise field_error("url", str(exc)) from None


@unit_of_work
def webhook_create(
    *, license: License, name: str, url: str, event_type: str, secret: str | None = None, active: bool = True
) -> Webhook:
    _check_url(url)
    webhook = Webhook(
        license=license,
        name=name,
        url=url,
        event_type=event_type,
        secret=secret or new_secret(),
        active=active,
    )
    stamp_create(webhook)
    webhook.save()
    return webhook


@unit_of_work
def webhook_update(*, webhook: Webhook, **fields) -> Webhook:
    """PATCH: name, url, eventType, secret, active. Switching a failing webhook on again makes it active."""
    webhook = Webhook.objects.select_for_update().get(pk=webhook.pk)
    if "url" in fields:
        _check_url(fields["url"])
    for key, value in fields.items():
        setattr(webhook, key, value)
    if fields.get("active") or "url" in fields:
        webhook.status = STATUS_ACTIVE  # the owner fixed or re-enabled it: give it a fresh start
    stamp_update(webhook)
    webhook.save()
    return webhook


@unit_of_work
def webhook_delete(*, webhook: Webhook) -> None:
    """Its deliveries go with it (pending ones are never sent)."""
    webhook.delete()
