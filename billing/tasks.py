"""Periodic billing work (scheduled in settings.CELERY_BEAT_SCHEDULE). Thin: find ids, call a service each."""

import datetime
import logging

from celery import shared_task
from django.conf import settings

from billing import selectors, services
from helpdesk.context import SCHEDULED_TASK, Actor, acting_as

log = logging.getLogger(__name__)


@shared_task
def renew_subscriptions() -> int:
    """Renew active subscriptions whose period has ended (one charge each); expire canceled ones and trials."""
    done = 0
    with acting_as(Actor(type=SCHEDULED_TASK)):
        for subscription_id in selectors.due_subscription_ids():
            try:
                services.subscription_renew(subscription_id=subscription_id)
                done += 1
            except Exception:  # one bad subscription must not stop the others
                log.exception("Renewal of subscription %s failed", subscription_id)
    return done


@shared_task
def reconcile_charges() -> int:
    """Finish charge intents that were left without an outcome (a crash or timeout after the gateway call)."""
    done = 0
    with acting_as(Actor(type=SCHEDULED_TASK)):
        for charge_id in selectors.stale_charge_intent_ids(settings.BILLING_RECONCILE_AFTER_SECONDS):
            try:
                services.charge_reconcile(charge_id=charge_id)
                done += 1
            except Exception:
                log.exception("Reconciliation of charge %s failed", charge_id)
    return done


@shared_task
def purge_idempotency_records() -> int:
    """Forget Idempotency-Keys older than BILLING_IDEMPOTENCY_KEY_HOURS (and keys of requests that died before
    charging), a bounded batch at a time."""
    older_than = datetime.timedelta(hours=settings.BILLING_IDEMPOTENCY_KEY_HOURS)
    open_older_than = datetime.timedelta(seconds=settings.BILLING_RECONCILE_AFTER_SECONDS)
    total = 0
    while purged := services.idempotency_records_purge(
        older_than=older_than, open_older_than=open_older_than
    ):
        total += purged
    return total
