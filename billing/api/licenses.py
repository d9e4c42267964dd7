"""What billing adds to the license documents of accounts' API (accounts never imports billing).

`register()` runs at ready(): the license document's `subscription` (the current subscription or null, loaded
for a whole list in one query), and the create body's `planCode` and `couponCode` (the trial's plan and coupon).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from billing.api.serializers import LicenseSubscriptionSerializer
from billing.plans import PLAN_CODES
from billing.selectors import license_subscriptions
from helpdesk.api.fields import StrictCharField


def attach_subscriptions(licenses) -> None:
    """Each license's subscription, for all of them in one query."""
    found = license_subscriptions([license.pk for license in licenses])
    for license in licenses:
        license._subscription = found.get(license.pk)


@extend_schema_field({"type": "object", "additionalProperties": {}, "nullable": True})
class LicenseSubscriptionField(serializers.Field):
    """Ours: the license's current subscription (subscriptionID, state, planCode, quantity,
    currentPeriodEndsAt) or null."""

    def __init__(self):
        super().__init__(source="*", read_only=True)

    def to_representation(self, license):
        if not hasattr(license, "_subscription"):
            attach_subscriptions([license])
        subscription = license._subscription
        return LicenseSubscriptionSerializer(subscription).data if subscription is not None else None


def register() -> None:
    from accounts.api.serializers import LicenseCreateSerializer, LicenseSerializer

    LicenseSerializer.extend("subscription", LicenseSubscriptionField, load=attach_subscriptions)
    LicenseCreateSerializer.extend(
        "planCode", lambda: serializers.ChoiceField(choices=PLAN_CODES, source="plan_code")
    )
    LicenseCreateSerializer.extend(
        "couponCode",
        lambda: StrictCharField(required=False, allow_blank=True, max_length=100, source="coupon_code"),
    )
