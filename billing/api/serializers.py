"""The Subscription's output (the spec's fields, letter for letter) and strict input for its writes."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from billing.plans import PLANS
from helpdesk.api.fields import StrictCharField, StrictIntegerField
from helpdesk.api.serializers import StrictSerializer, TimestampField

MAX_QUANTITY = 10_000


class SubscriptionSerializer(serializers.Serializer):
    state = serializers.CharField(read_only=True)
    quantity = serializers.IntegerField(read_only=True)
    subscriptionID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    planCode = serializers.CharField(source="plan_code", read_only=True)
    unitAmountInCents = serializers.IntegerField(source="unit_amount_in_cents", read_only=True)
    activatedAt = TimestampField(source="activated_at", read_only=True, allow_null=True)
    cancelledAt = TimestampField(source="cancelled_at", read_only=True, allow_null=True)
    expiresAt = TimestampField(source="expires_at", read_only=True, allow_null=True)
    trialStartedAt = TimestampField(source="trial_started_at", read_only=True, allow_null=True)
    trialEndsAt = TimestampField(source="trial_ends_at", read_only=True, allow_null=True)
    currentPeriodStartedAt = TimestampField(source="current_period_started_at", read_only=True)
    currentPeriodEndsAt = TimestampField(source="current_period_ends_at", read_only=True)
    createdAt = TimestampField(source="created_at", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)


class LicenseSubscriptionSerializer(serializers.Serializer):
    """The summary that the license carries."""

    subscriptionID = serializers.UUIDField(source="pk", read_only=True)
    state = serializers.CharField(read_only=True)
    planCode = serializers.CharField(source="plan_code", read_only=True)
    quantity = serializers.IntegerField(read_only=True)
    currentPeriodEndsAt = TimestampField(source="current_period_ends_at", read_only=True)


@extend_schema_field({"type": "string", "enum": list(PLANS)})
class PlanCodeField(StrictCharField):
    default_error_messages = {"invalid_choice": "'{value}' is not a plan code."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in PLANS:
            self.fail("invalid_choice", value=value)
        return value


class SubscriptionCreateSerializer(StrictSerializer):
    planCode = PlanCodeField(source="plan_code")
    quantity = StrictIntegerField(min_value=1, max_value=MAX_QUANTITY)
    couponCode = StrictCharField(
        source="coupon_code", required=False, allow_null=True, allow_blank=True, max_length=50
    )


class SubscriptionUpdateSerializer(StrictSerializer):
    planCode = PlanCodeField(source="plan_code", required=False)
    quantity = StrictIntegerField(min_value=1, max_value=MAX_QUANTITY, required=False)
    couponCode = StrictCharField(
        source="coupon_code", required=False, allow_null=True, allow_blank=True, max_length=50
    )

    def validate(self, attrs):
        if "plan_code" not in attrs and "quantity" not in attrs:
            raise serializers.ValidationError({"non_field_errors": ["Give planCode, quantity or both."]})
        return attrs


class EmptyBodySerializer(StrictSerializer):
    """cancel and reactivate take only the path."""
