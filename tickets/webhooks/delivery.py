"""Sending a delivery: one attempt per task run, claimed in a transaction of its own, and what follows from it.

`attempt()` claims the row if it is pending and due (a short transaction of its own: `attempts` counts the try
and `next_attempt_at` moves CLAIM ahead, so nobody else sends it meanwhile), POSTs the stored body (signed) to the
address the guard checked with no transaction open, and records the outcome: a 2xx succeeds; anything else
(another status, a timeout, a refused connection, an address the guard refuses) schedules the next attempt after
WEBHOOK_RETRY_SCHEDULE_SECONDS, or, past the schedule or 24 hours after the first attempt, fails the delivery,
marks the webhook `failing` and e-mails the license's owners (once, when it turns failing). Only a worker that
dies between the receiver's answer and that record leaves a claim that expires, and the event is sent again
(same X-Webhook-ID, so a receiver can drop the copy).

Retries are not Celery countdowns: the row's `next_attempt_at` says when, and the sweeper (beat, every 30 s)
queues the pending rows that are due, so nothing depends on a broker keeping a message for hours. Because
`attempt()` claims a row once, a row queued twice is sent once.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
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


CLAIM = timedelta(minutes=2)  # longer than one attempt (WEBHOOK_TIMEOUT_SECONDS bounds each of its steps)
RECORD_TRIES = 6


def _claim(delivery_id) -> WebhookDelivery | None:
    """Take a pending, due delivery for one attempt, in a transaction of its own committed before the POST:
    `attempts` counts it and `next_attempt_at` moves CLAIM ahead, so nobody else (a task queued twice, the
    sweeper) sends it meanwhile. A claim whose worker died expires then and the sweeper queues the row again."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("webhook")
            .filter(pk=delivery_id)
            .first()
        )
        now = timezone.now()
        if delivery is None or delivery.status != WebhookDelivery.PENDING:
            return None
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
            return None  # queued early or twice, or being sent; the sweeper queues it again when it is due
        if not delivery.webhook.active:
            # Switched off after the event: not sent. A redelivery after switching it on sends it.
            _finish(delivery, WebhookDelivery.FAILED, error="The webhook is switched off (active is false).")
            return None
        delivery.attempts += 1
        delivery.first_attempt_at = delivery.first_attempt_at or now
        claim = max(CLAIM, timedelta(seconds=4 * settings.WEBHOOK_TIMEOUT_SECONDS))  # connect, write, read
        delivery.last_attempt_at, delivery.next_attempt_at = now, now + claim
        delivery.save(update_fields=["attempts", "first_attempt_at", "last_attempt_at", "next_attempt_at"])
        return delivery


def attempt(*, delivery_id) -> WebhookDelivery | None:
    """Make one attempt if the delivery is pending and due (see the module's docstring)."""
    import httpx

    delivery = _claim(delivery_id)
    if delivery is None:
        return WebhookDelivery.objects.filter(pk=delivery_id).first()
    webhook = delivery.webhook
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
    delivery.response_code, delivery.response_body = code, text
    for try_ in range(RECORD_TRIES):
        try:
            _record(delivery, webhook, code, error)
            break
        except DatabaseError:
            # What the receiver said must not be lost, or the sweeper would send it again when the claim
            # expires: retried for ~30 s, then left to the claim (at-least-once).
            if try_ == RECORD_TRIES - 1 or connection.in_atomic_block:
                log.exception("Webhook delivery %s: could not record its attempt", delivery.pk)
                raise
            close_old_connections()
            time.sleep(min(2**try_, 8))
    return delivery


def _record(delivery: WebhookDelivery, webhook: Webhook, code: int | None, error: str) -> None:
    with transaction.atomic():
        claimed = WebhookDelivery.objects.select_for_update().filter(
            pk=delivery.pk, status=WebhookDelivery.PENDING, attempts=delivery.attempts
        )
        if claimed.first() is None:
            return  # the claim expired and another worker took the row over
        if code is not None and 200 <= code < 300:
            _finish(delivery, WebhookDelivery.SUCCEEDED, error="")
            if webhook.status == STATUS_FAILING:
                Webhook.objects.filter(pk=webhook.pk).update(status=WEBHOOK_ACTIVE)
            return
        error = error or f"The receiver answered {code}."
        retry_at = _next_attempt_at(delivery)
        if retry_at is None:
            _finish(delivery, WebhookDelivery.FAILED, error=error)
            _mark_failing(webhook, delivery)
        else:
            delivery.error, delivery.next_attempt_at = error, retry_at
            delivery.save()


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
