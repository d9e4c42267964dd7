"""`GET, POST /v1/webhooks` · `GET, PATCH, DELETE /v1/webhooks/{ID}` · `GET /v1/webhooks/{ID}/deliveries` ·
`POST /v1/webhooks/{ID}/deliveries/{deliveryID}/redeliver`: owners only (other roles 403, other licenses 404)."""

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from helpdesk.api.fields import StrictBooleanField, StrictCharField
from helpdesk.api.permissions import OWNERS
from helpdesk.api.resources import ResourceViewSet, published_event_types
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer, TimestampField
from tickets.webhooks import delivery, services
from tickets.webhooks.models import EVENT_TYPES, Webhook, WebhookDelivery

MAX_DELIVERIES = 100


class WebhookSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    url = serializers.CharField(read_only=True)
    eventType = serializers.CharField(source="event_type", read_only=True)
    active = serializers.BooleanField(read_only=True)
    status = serializers.CharField(read_only=True)


class WebhookCreatedSerializer(WebhookSerializer):
    """The create response: the only time the secret is shown."""

    secret = serializers.CharField(read_only=True)


class WebhookWriteSerializer(StrictSerializer):
    name = StrictCharField(max_length=200)
    url = StrictCharField(max_length=2000)
    eventType = serializers.ChoiceField(source="event_type", choices=EVENT_TYPES)
    # At least 16 characters when chosen by the caller; generated (and returned once) when left out.
    secret = StrictCharField(min_length=16, max_length=200, write_only=True)
    active = StrictBooleanField()

    def get_fields(self):
        fields = super().get_fields()
        # The resources that publish add their own (helpdesk.api.resources: `webhook_events = True`).
        fields["eventType"].choices = EVENT_TYPES + published_event_types()
        return fields


class WebhookCreateSerializer(WebhookWriteSerializer):
    secret = StrictCharField(min_length=16, max_length=200, write_only=True, required=False)
    active = StrictBooleanField(required=False)


class WebhookDeliverySerializer(serializers.Serializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    webhookID = serializers.UUIDField(source="webhook_id", read_only=True)
    eventType = serializers.CharField(source="event_type", read_only=True)
    status = serializers.CharField(read_only=True)
    attempts = serializers.IntegerField(read_only=True)
    createdAt = TimestampField(source="created_at", read_only=True)
    lastAttemptAt = TimestampField(source="last_attempt_at", read_only=True, allow_null=True)
    nextAttemptAt = TimestampField(source="next_attempt_at", read_only=True, allow_null=True)
    durationMs = serializers.IntegerField(source="duration_ms", read_only=True, allow_null=True)
    responseCode = serializers.IntegerField(source="response_code", read_only=True, allow_null=True)
    responseBody = serializers.CharField(source="response_body", read_only=True)
    error = serializers.CharField(read_only=True)
    redeliveryOf = serializers.UUIDField(source="redelivery_of_id", read_only=True, allow_null=True)


class WebhookViewSet(ResourceViewSet):
    resource_name = "webhooks"
    queryset = Webhook.objects.order_by("created_at", "id")
    serializer_class = WebhookSerializer
    create_serializer_class = WebhookCreateSerializer
    created_serializer_class = WebhookCreatedSerializer
    write_serializer_class = WebhookWriteSerializer
    create_service = services.webhook_create
    update_service = services.webhook_update
    delete_service = services.webhook_delete
    readers = OWNERS  # secrets and receiver answers: owners only, reads included
    lookup_url_kwarg = "webhookID"
    pagination_class = None
    audit_target = "webhooks"
    openapi_tag = ("Webhooks", "Signed HTTP callbacks for ticket and account events, and their deliveries.")
    noun = ("webhook", "webhooks")
    descriptions = {
        "create": """
            Subscribe a URL to one event type. The response carries the signing secret: the only time it is
            shown (it is generated unless you give one of at least 16 characters).
        """
    }

    @extend_schema(responses=WebhookDeliverySerializer(many=True))
    @action(detail=True, methods=["get"], url_path="deliveries")
    def deliveries(self, request, **kwargs):
        """The webhook's newest 100 deliveries, newest first, with their last attempt's outcome."""
        webhook = self.get_object()
        rows = WebhookDelivery.objects.for_license(request.license).filter(webhook=webhook)
        rows = rows.order_by("-created_at", "-id")[:MAX_DELIVERIES]
        return Response(WebhookDeliverySerializer(rows, many=True).data)

    @extend_schema(request=None, responses={202: WebhookDeliverySerializer})
    @action(detail=True, methods=["post"], url_path=r"deliveries/(?P<deliveryID>[^/]+)/redeliver")
    def redeliver(self, request, deliveryID=None, **kwargs):
        """Send a delivery's event again (a new delivery with the same body); 202, it goes out shortly."""
        webhook = self.get_object()
        try:
            original = WebhookDelivery.objects.for_license(request.license).get(
                webhook=webhook, pk=deliveryID
            )
        except (WebhookDelivery.DoesNotExist, ValueError, ValidationError):
            raise NotFound() from None
        copy = delivery.redeliver(delivery=original)
        return Response(WebhookDeliverySerializer(copy).data, status=status.HTTP_202_ACCEPTED)
