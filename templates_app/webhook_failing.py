"""The mail to a license's owners when one of its webhooks turns failing (tickets/webhooks/delivery.py gives up on
a delivery and sends `tickets.signals.webhook_failing`, once per turn)."""

from accounts.models import ROLE_OWNER, STATUS_ACTIVE, Agent
from templates_app import mail
from templates_app.models import OutboundMessage

FAILING_MAIL = """Your webhook "{name}" ({event_type}) could not deliver an event to {url}.

We tried {attempts} times; the last attempt said: {error}

The webhook is now marked as failing. Events keep being sent to it; the failed delivery can be sent again
with POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver once the receiver works. The attempts
and the receiver's answers are listed at GET /v1/webhooks/{webhook_id}/deliveries."""


def on_webhook_failing(sender, *, webhook, delivery, **kwargs) -> None:
    """Receiver of tickets.signals.webhook_failing, in the transaction that marks the webhook failing."""
    license = webhook.license
    owners = Agent.objects.filter(license_id=webhook.license_id, status=STATUS_ACTIVE).order_by("created_at")
    body = FAILING_MAIL.format(
        name=webhook.name,
        event_type=webhook.event_type,
        url=webhook.url,
        attempts=delivery.attempts,
        error=delivery.error,
        webhook_id=webhook.pk,
        delivery_id=delivery.pk,
    )
    for owner in owners:
        if ROLE_OWNER not in owner.roles:
            continue
        mail.license_mail_queue(
            license=license,
            kind=OutboundMessage.KIND_WEBHOOK_FAILING,
            key=f"webhookFailing:{delivery.pk}:{owner.pk}",
            to=owner.email,
            subject=f'Webhook "{webhook.name}" is failing',
            body=body,
        )
