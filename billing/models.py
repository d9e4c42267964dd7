"""Subscriptions, the charge ledger, idempotency records, and the sandbox gateway's own ledger."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import LicenseOwned, LicenseQuerySet, Stamped
from billing.plans import PLAN_CODES

ACTIVE, EXPIRED, CANCELED, FUTURE, PENDING = "active", "expired", "canceled", "future", "pending"
STATES = [ACTIVE, EXPIRED, CANCELED, FUTURE, PENDING]
# States that still give service (a canceled subscription runs until its period ends).
CURRENT_STATES = [ACTIVE, CANCELED]


class SubscriptionQuerySet(LicenseQuerySet):
    def current(self):
        return self.filter(state__in=CURRENT_STATES)


class Subscription(LicenseOwned, Stamped):
    """The selected plan and the number of paid agent seats of a license.

    States: `pending` (created, its first charge not yet confirmed), `active`, `canceled` (no renewal; service
    until `currentPeriodEndsAt`), `expired` (no service). `future` is accepted by the filter but not produced.
    A trial is an `active` subscription with `trialStartedAt`/`trialEndsAt` and no charge; it expires at its end.
    Lower plan or quantity requests wait in `pending_plan_code`/`pending_quantity` until the next renewal.
    While `charge_in_flight` is set, a charge for this subscription is between the gateway and our ledger,
    and no other change is accepted (409 `charge_in_progress`).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    state = models.CharField(max_length=10, choices=[(s, s) for s in STATES], default=PENDING)
    plan_code = models.CharField(max_length=30, choices=[(c, c) for c in PLAN_CODES])
    quantity = models.PositiveIntegerField()
    unit_amount_in_cents = models.PositiveIntegerField()
    # Length of the current period, in months (a mid-period plan change keeps the period it was bought with).
    period_months = models.PositiveSmallIntegerField(default=1)
    is_trial = models.BooleanField(default=False)
    # Null only while a subscription was never activated (pending, or its first charge was declined).
    activated_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    trial_started_at = models.DateTimeField(null=True, blank=True)
    trial_ends_at = models.DateTimeField(null=True, blank=True)
    current_period_started_at = models.DateTimeField(default=timezone.now)
    current_period_ends_at = models.DateTimeField(default=timezone.now)
    # A trial's coupon (given at license creation), applied to the first charge when the trial converts.
    coupon_code = models.CharField(max_length=50, blank=True)
    pending_plan_code = models.CharField(max_length=30, blank=True)
    pending_quantity = models.PositiveIntegerField(null=True, blank=True)
    charge_in_flight = models.ForeignKey(
        "billing.Charge", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = SubscriptionQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["license", "created_at"], name="subscription_license_created"),
            models.Index(
                fields=["license", "state", "current_period_ends_at"], name="subscription_license_due"
            ),
        ]

    def __str__(self):
        return f"{self.plan_code} × {self.quantity} ({self.state})"

    @property
    def seats(self) -> int:
        """Seats that may be in use now: a scheduled reduction already limits new agents."""
        if self.pending_quantity is not None:
            return min(self.quantity, self.pending_quantity)
        return self.quantity


REASON_CREATE, REASON_UPGRADE, REASON_QUANTITY, REASON_RENEWAL, REASON_REACTIVATION = (
    "create", "upgrade", "quantity_increase", "renewal", "reactivation",
)  # fmt: skip
REASONS = [REASON_CREATE, REASON_UPGRADE, REASON_QUANTITY, REASON_RENEWAL, REASON_REACTIVATION]
INTENT, SUCCEEDED, DECLINED, FAILED = "intent", "succeeded", "declined", "failed"
CHARGE_STATUSES = [INTENT, SUCCEEDED, DECLINED, FAILED]


class Charge(LicenseOwned):
    """One attempt to take money: the ledger. Written as an `intent` (committed) before the gateway is called,
    completed after. `idempotency_key` is the key the gateway sees: calling it again with the same key returns
    the first result, which is how an interrupted charge is finished without charging twice.
    `change` is what the charge pays for, applied to the subscription when the charge succeeds.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # RESTRICT, not PROTECT: a charge outlives a stray subscription delete, but goes with its license.
    subscription = models.ForeignKey(Subscription, on_delete=models.RESTRICT, related_name="charges")
    amount = models.PositiveIntegerField()  # cents
    currency = models.CharField(max_length=3)
    reason = models.CharField(max_length=20, choices=[(r, r) for r in REASONS])
    status = models.CharField(max_length=10, choices=[(s, s) for s in CHARGE_STATUSES], default=INTENT)
    idempotency_key = models.CharField(max_length=300, unique=True)
    gateway_reference = models.CharField(max_length=100, blank=True)
    failure_message = models.CharField(max_length=500, blank=True)
    change = models.JSONField(default=dict)
    request = models.ForeignKey(
        "billing.IdempotencyRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="charges"
    )
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["license", "created_at"], name="charge_license_created"),
            # The reconciler's scan: intents are few, so a partial index keeps it small.
            models.Index(
                fields=["license", "created_at"],
                name="charge_license_open_intent",
                condition=Q(status=INTENT),
            ),
        ]

    def __str__(self):
        return f"{self.reason} {self.amount} {self.currency} ({self.status})"


class IdempotencyRecord(LicenseOwned):
    """The first response to a request that carried an `Idempotency-Key`, replayed for the same key.

    `status` is null while the first request is still being processed. The response of a charging request is
    written in the same transaction as the change it reports, so a crash can never leave one without the other.
    """

    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    # JSON text, not a JSONField: PostgreSQL's jsonb would reorder the keys, and a replay must be the same bytes.
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint("license", "key", name="idempotency_key_unique_per_license")]
        indexes = [models.Index(fields=["license", "created_at"], name="idempotency_license_created")]

    def __str__(self):
        return f"{self.key} ({self.status or 'in progress'})"


class SandboxCharge(models.Model):
    """The sandbox gateway's own ledger (what a real provider keeps on its side), keyed by idempotency key."""

    idempotency_key = models.CharField(max_length=300, unique=True)
    reference = models.CharField(max_length=100, unique=True)
    license_id = models.BigIntegerField()
    amount = models.PositiveIntegerField()
    currency = models.CharField(max_length=3)
    status = models.CharField(max_length=10)
    message = models.CharField(max_length=500, blank=True)
    refunded_amount = models.PositiveIntegerField(default=0)
    refund_keys = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.reference} {self.amount} {self.currency} ({self.status})"


class SandboxCard(models.Model):
    """The sandbox's card on file for a license: a test card that declines every charge when `declines`."""

    license_id = models.BigIntegerField(unique=True)
    declines = models.BooleanField(default=False)

    def __str__(self):
        return f"sandbox card of license {self.license_id}" + (" (declines)" if self.declines else "")
