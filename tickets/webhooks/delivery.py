"""Sending a delivery: one attempt per task run, under the delivery's row lock, and what follows from it.

`attempt()` locks the row, skips it unless it is pending and due, POSTs the stored body (signed) to the address
the guard checked, and records the outcome in the same transaction: a 2xx succeeds; anything else (another
status, a timeout, a refused connection, an address the guard refuses) schedules the next attempt after
WEBHOOK_RETRY_SCHEDULE_SECONDS, or, past the schedule or 24 hours after the first attempt, fails the delivery,
marks the webhook `failing` and e-mails the license's owners (once, when it turns failing).

Retries are not Celery countdowns: the row's `next_attempt_at` says when, and the sweeper (beat, every 30 s)
queues the pending rows that are due, so nothing depends on a broker keeping a message for hours. Because
`attempt()` re-checks status and due time under the lock, a row queued twice is sent once.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from helpdesk.queue import task_named
from tickets.signals import webhook_failing
from tickets.webhooks import guard
from tickets.webhooks.models import STATUS_ACTIVE as WEBHOOK_ACTIVE
from tickets.webhooks.models import STATUS_FAILING, Webhook, WebhookDelivery

log = logging.getLogger(__name__)

USER_AGENT = "HelpDesk-Webhooks/1.0"
MAX_WINDOW = timedelta(hours=24)
RESPONSE_BYTES = 1024
SWEEP_BATCH = 500


def signature(secret: str, timestamp: str, body: str) -> str:
    """`v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` (what receivers recompute; see docs/api.md)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"v1={digest}"


def enqueue(delivery_id) -> None:
    """Hand a delivery to the workers; if the broker is down the sweeper picks the row up when it is due."""
    deliver_webhook = task_named(
        "tickets.tasks.deliver_webhook"
    )  # named, not imported: tasks.py calls this module
    try:
        deliver_webhook.delay(str(delivery_id))
    except Exception:
        log.exception("Could not enqueue webhook delivery %s; the sweeper will pick it up", delivery_id)


def enqueue_on_commit(delivery_id) -> None:
    transaction.on_commit(lambda: enqueue(delivery_id))


def _host_header(target: guard.Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host  # an IPv6 literal
    return host if target.port == guard.SCHEMES[target.scheme] else f"{host}:{target.port}"


def _post(delivery: WebhookDelivery, webhook: Webhook) -> tuple[int | None, str, str]:
    """One POST: (response code or None, first KB of the response, error)."""
    import httpx  # here: every process that writes tickets imports this module, few of them send webhooks

    target = guard.resolve(webhook.url)  # raises UnsafeURL
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Webhook-ID": str(delivery.pk),
        "X-Webhook-Timestamp": timestamp,
        "X-Webhook-Signature": signature(webhook.secret, timestamp, delivery.body),
        # The URL's own host: the connection goes to the checked address (below), the server sees its name.
        "Host": _host_header(target),
    }
    url = httpx.URL(webhook.url).copy_with(host=target.ip)
    # No proxies from the environment (they would resolve the name again) and no redirects (a 3xx could point
    # anywhere, the host's network included): a 3xx is a failed attempt like any non-2xx.
    with httpx.Client(
        timeout=settings.WEBHOOK_TIMEOUT_SECONDS, trust_env=False, follow_redirects=False
    ) as client:
        request = client.build_request(
            "POST",
            url,
            content=delivery.body.encode(),
            headers=headers,
            extensions={"sni_hostname": target.host} if target.scheme == "https" else {},
        )
        response = client.send(request, stream=True)
        try:
            head = b""
            for chunk in response.iter_raw():
                head += chunk
                if len(head) >= RESPONSE_BYTES:
                    break
        finally:
            response.close()
    text = head[:RESPONSE_BYTES].decode("utf-8", errors="replace")
    return response.status_code, text, ""


def attempt(*, delivery_id) -> WebhookDelivery | None:
    """Make one attempt if the delivery is pending and due (see the module's docstring)."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("webhook")
            .filter(pk=delivery_id)
            .first()
        )
        now = timezone.now()
        if delivery is None or delivery.status != WebhookDelivery.PENDING:
            return delivery
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
            return delivery  # queued early or twice; the sweeper queues it again when it is due
        webhook = delivery.webhook
        if not webhook.active:
            # Switched off after the event: not sent. A redelivery after switching it on sends it.
            _finish(delivery, WebhookDelivery.FAILED, error="The webhook is switched off (active is false).")
            return delivery
        import httpx

        started = time.monotonic()
        code, text, error = None, "", ""
        try:
            code, text, error = _post(delivery, webhook)
        except guard.UnsafeURL as exc:
            error = str(exc)
        except httpx.TimeoutException:
            error = f"No response within {settings.WEBHOOK_TIMEOUT_SECONDS} seconds."
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:1000]
        delivery.duration_ms = int((time.monotonic() - started) * 1000)
        delivery.attempts += 1
        delivery.first_attempt_at = delivery.first_attempt_at or now
        delivery.last_attempt_at = now
        delivery.response_code, delivery.response_body = code, text
        if code is not None and 200 <= code < 300:
            _finish(delivery, WebhookDelivery.SUCCEEDED, error="")
            if webhook.status == STATUS_FAILING:
                Webhook.objects.filter(pk=webhook.pk).update(status=WEBHOOK_ACTIVE)
            return delivery
        error = error or f"The receiver answered {code}."
        retry_at = _next_attempt_at(delivery)
        if retry_at is None:
            _finish(delivery, WebhookDelivery.FAILED, error=error)
            _mark_failing(webhook, delivery)
        else:
            delivery.error, delivery.next_attempt_at = error, retry_at
            delivery.save()
        return delivery


def _next_attempt_at(delivery: WebhookDelivery):
    schedule = settings.WEBHOOK_RETRY_SCHEDULE_SECONDS
    if delivery.attempts > len(schedule):
        return None
    retry_at = delivery.last_attempt_at + timedelta(seconds=schedule[delivery.attempts - 1])
    if retry_at > delivery.first_attempt_at + MAX_WINDOW:
        return None
    return retry_at


def _finish(delivery: WebhookDelivery, status: str, *, error: str) -> None:
    delivery.status, delivery.error, delivery.next_attempt_at = status, error, None
    delivery.save()


def _mark_failing(webhook: Webhook, delivery: WebhookDelivery) -> None:
    """The webhook turns failing; its owners hear of it once (not again for every failed delivery)."""
    turned = Webhook.objects.filter(pk=webhook.pk, status=WEBHOOK_ACTIVE).update(status=STATUS_FAILING)
    if turned:
        webhook_failing.send(
            sender=Webhook, webhook=webhook, delivery=delivery
        )  # the e-mail app tells the owners


@transaction.atomic
def redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery's event again, as a new delivery (its own ID and attempts; the same body)."""
    copy = WebhookDelivery.objects.create(
        license_id=delivery.license_id,
        webhook_id=delivery.webhook_id,
        event_type=delivery.event_type,
        body=delivery.body,
        redelivery_of=delivery,
    )
    enqueue_on_commit(copy.pk)
    return copy


RETENTION = timedelta(days=30)


def sweep() -> int:
    """Queue the pending deliveries that are due (oldest first, a bounded batch per run); forget finished
    deliveries after RETENTION (a bounded batch per run too)."""
    old = WebhookDelivery.objects.filter(created_at__lt=timezone.now() - RETENTION).exclude(
        status=WebhookDelivery.PENDING
    )
    stale = list(old.order_by("created_at").values_list("pk", flat=True)[:SWEEP_BATCH])
    if stale:
        WebhookDelivery.objects.filter(pk__in=stale).delete()
    due = list(
        WebhookDelivery.objects.filter(status=WebhookDelivery.PENDING, next_attempt_at__lte=timezone.now())
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    for delivery_id in due:
        enqueue(delivery_id)
    return len(due)
