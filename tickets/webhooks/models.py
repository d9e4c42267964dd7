"""A license's webhooks and their deliveries (the outbox). Loaded from tickets/models.py, like models_purge."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import LicenseOwned, Stamped

EVENT_TYPES = [
    "tickets.create", "tickets.update", "tickets.statusChange",
    "tickets.events.status", "tickets.events.priority", "tickets.events.message", "tickets.events.tags",
    "tickets.events.followers", "tickets.events.assignment",
    "tickets.events.rule",
    "tickets.events.sla",
    "agents.create", "agents.update", "agents.delete",
    "teams.create", "teams.update", "teams.delete",
    "subscriptions.create", "subscriptions.update", "subscriptions.delete",
]  # fmt: skip
STATUS_ACTIVE, STATUS_FAILING = "active", "failing"


class Webhook(LicenseOwned, Stamped):
    """One URL subscribed to one event type. `status` turns `failing` when a delivery gave up (the owners are
    told once) and back to `active` on the next success."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    url = models.CharField(max_length=2000)
    event_type = models.CharField(max_length=40, choices=[(t, t) for t in EVENT_TYPES])
    secret = models.CharField(max_length=200)
    active = models.BooleanField(default=True)
    status = models.CharField(
        max_length=10, choices=[(s, s) for s in (STATUS_ACTIVE, STATUS_FAILING)], default=STATUS_ACTIVE
    )

    class Meta:
        indexes = [models.Index(fields=["license", "event_type", "active"], name="webhook_license_event")]

    def __str__(self):
        return f"{self.name} ({self.event_type})"


class WebhookDelivery(LicenseOwned):
    """One event to send to one webhook, and how its attempts went.

    `body` is the exact JSON sent (serialized once, so every attempt signs and sends the same bytes).
    Pending rows whose `next_attempt_at` has passed are picked up by the sweeper, so an event survives a
    broker or worker outage.
    """

    PENDING, SUCCEEDED, FAILED = "pending", "succeeded", "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event_type = models.CharField(max_length=40)
    body = models.TextField()
    status = models.CharField(
        max_length=10, choices=[(s, s) for s in (PENDING, SUCCEEDED, FAILED)], default=PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    first_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True)  # the first KB
    error = models.TextField(blank=True)
    redelivery_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )

    class Meta:
        indexes = [
            models.Index(fields=["webhook", "-created_at"], name="webhook_delivery_newest"),
            models.Index(fields=["created_at"], name="webhook_delivery_created"),  # retention (sweeper)
            # The sweeper's scan: pending rows by due time.
            models.Index(
                fields=["next_attempt_at"], name="webhook_delivery_due", condition=models.Q(status="pending")
            ),
        ]

    def __str__(self):
        return f"{self.event_type} → {self.webhook_id} ({self.status})"
