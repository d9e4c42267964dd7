"""Reads of billing that are more than a one-line queryset."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.utils import timezone

from billing.models import ACTIVE, CANCELED, INTENT, Charge, Subscription


def _gives_service(subscription: Subscription, now) -> bool:
    return subscription.state == ACTIVE or (
        subscription.state == CANCELED and subscription.current_period_ends_at > now
    )


def license_subscriptions(license_ids) -> dict[int, Subscription]:
    """Each license's subscription to show on it, in one query: the one giving service, else the latest
    that was ever activated (so a lapsed license shows `expired`). Licenses without one are absent."""
    now = timezone.now()
    chosen: dict[int, Subscription] = {}
    rows = Subscription.objects.filter(license_id__in=list(license_ids), activated_at__isnull=False).order_by(
        "license_id", "-created_at"
    )
    for subscription in rows:
        best = chosen.get(subscription.license_id)
        if best is None or (_gives_service(subscription, now) and not _gives_service(best, now)):
            chosen[subscription.license_id] = subscription
    return chosen


def seat_limit(license) -> int:
    """How many agents may be active. No subscription ever: the trial allowance (an implicit trial)."""
    now = timezone.now()
    subscriptions = list(
        Subscription.objects.for_license(license).filter(activated_at__isnull=False).order_by("-created_at")
    )
    for subscription in subscriptions:
        if _gives_service(subscription, now):
            return subscription.seats
    return 0 if subscriptions else settings.BILLING_TRIAL_SEATS


def due_subscription_ids(now=None, limit: int = 500) -> list:
    """Subscriptions whose period has ended and that are still active or canceled (operator-wide scan)."""
    now = now or timezone.now()
    return list(
        Subscription.objects.filter(state__in=[ACTIVE, CANCELED], current_period_ends_at__lte=now)
        .order_by("current_period_ends_at")
        .values_list("pk", flat=True)[:limit]
    )


def stale_charge_intent_ids(older_than_seconds: int, limit: int = 500) -> list:
    cutoff = timezone.now() - datetime.timedelta(seconds=older_than_seconds)
    return list(
        Charge.objects.filter(status=INTENT, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
