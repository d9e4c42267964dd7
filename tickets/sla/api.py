"""`/v1/businessHours` and `/v1/slaPolicies` (declared viewsets; owners write, everyone reads)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from helpdesk.api.fields import (
    JSONArrayField,
    JSONObjectField,
    StrictCharField,
    StrictIntegerField,
    StrictUUIDField,
)
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from tickets.rules import conditions as rule_conditions
from tickets.sla import clock, services
from tickets.sla.models import BusinessHours, SlaPolicy
from tickets.sla.tracker import TARGET_KEYS

HHMM = {"type": "string", "pattern": "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"}
INTERVAL = {"type": "array", "items": HHMM, "minItems": 2, "maxItems": 2}
WEEK_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        day: {"type": "array", "items": INTERVAL, "maxItems": services.MAX_INTERVALS} for day in clock.DAYS
    },
    "description": "Each weekday's working intervals `[start, end)` in local wall time (`HH:MM`, end up to "
    "`24:00`); an interval ends after it starts and overlaps no other of its day; a night shift is split at "
    "midnight. At least one interval in the week.",
}
HOLIDAYS_SCHEMA = {
    "type": "array",
    "items": {"type": "string", "format": "date"},
    "maxItems": services.MAX_HOLIDAYS,
    "uniqueItems": True,
    "description": "Local dates without working time.",
}
MINUTES = {"type": "integer", "minimum": 1, "maximum": services.MAX_MINUTES, "nullable": True}
TARGETS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        priority: {
            "type": "object",
            "additionalProperties": False,
            "properties": {key: MINUTES for key in TARGET_KEYS.values()},
        }
        for priority in services.PRIORITY_KEYS
    },
    "description": "Per priority (-10, 0, 10, 20): minutes of business time for the first response, the next "
    "response and the resolution (null or absent: not tracked).",
}


def _conditions_schema() -> dict:
    schema = rule_conditions.json_schema()
    shapes = [
        shape
        for shape in schema["items"]["oneOf"]
        if shape["properties"]["type"]["enum"][0] not in services.NOT_FOR_POLICIES
    ]
    return {**schema, "items": {"oneOf": shapes}}


@extend_schema_field(WEEK_SCHEMA)
class WeekField(JSONObjectField):
    pass


@extend_schema_field(HOLIDAYS_SCHEMA)
class HolidaysField(JSONArrayField):
    pass


@extend_schema_field(TARGETS_SCHEMA)
class TargetsField(JSONObjectField):
    pass


@extend_schema_field(_conditions_schema())
class ConditionsField(JSONArrayField):
    def __init__(self, **kwargs):
        super().__init__(max_size=rule_conditions.MAX_CONDITIONS * 8 * 1024, **kwargs)


class BusinessHoursSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    timezone = serializers.CharField(read_only=True)
    week = WeekField(read_only=True)
    holidays = HolidaysField(read_only=True)

    class Meta:
        fields = [
            "ID", "licenseID", "name", "timezone", "week", "holidays",
            "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy",
        ]  # fmt: skip


class BusinessHoursUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    timezone = StrictCharField(max_length=64, required=False, help_text="An IANA time zone (Europe/Warsaw).")
    week = WeekField(required=False, max_size=16 * 1024)
    holidays = HolidaysField(required=False, max_size=16 * 1024)


class BusinessHoursCreateSerializer(BusinessHoursUpdateSerializer):
    name = StrictCharField(max_length=200)
    timezone = StrictCharField(max_length=64, help_text="An IANA time zone (Europe/Warsaw).")
    week = WeekField(max_size=16 * 1024)


class SlaPolicySerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    ordering = serializers.IntegerField(read_only=True)
    conditions = ConditionsField(read_only=True)
    targets = TargetsField(read_only=True)
    businessHoursID = serializers.UUIDField(source="business_hours_id", read_only=True, allow_null=True)

    class Meta:
        fields = [
            "ID", "licenseID", "name", "ordering", "conditions", "targets", "businessHoursID",
            "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy",
        ]  # fmt: skip


class SlaPolicyUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    ordering = StrictIntegerField(required=False, min_value=-1_000_000, max_value=1_000_000)
    conditions = ConditionsField(required=False)
    targets = TargetsField(required=False, max_size=16 * 1024)
    businessHoursID = StrictUUIDField(
        source="business_hours_id", required=False, allow_null=True, help_text="null: 24/7."
    )


class SlaPolicyCreateSerializer(SlaPolicyUpdateSerializer):
    name = StrictCharField(max_length=200)
    targets = TargetsField(max_size=16 * 1024)


class BusinessHoursViewSet(ResourceViewSet):
    resource_name = "businessHours"
    queryset = BusinessHours.objects.order_by("created_at", "id")
    serializer_class = BusinessHoursSerializer
    write_serializer_class = BusinessHoursUpdateSerializer
    create_serializer_class = BusinessHoursCreateSerializer
    create_service = services.business_hours_create
    update_service = services.business_hours_update
    delete_service = services.business_hours_delete
    lookup_url_kwarg = "businessHoursID"
    audit_target = "businessHours"
    webhook_events = True
    openapi_tag = ("Business hours", "When a license works: the time SLA policies count in.")
    noun = ("business hours", "business hours")
    descriptions = {
        "destroy": "Delete business hours; 409 `in_use` while an SLA policy counts in them.",
    }


class SlaPolicyViewSet(ResourceViewSet):
    resource_name = "slaPolicies"
    queryset = SlaPolicy.objects.order_by("created_at", "id")
    serializer_class = SlaPolicySerializer
    write_serializer_class = SlaPolicyUpdateSerializer
    create_serializer_class = SlaPolicyCreateSerializer
    create_service = services.sla_policy_create
    update_service = services.sla_policy_update
    delete_service = services.sla_policy_delete
    lookup_url_kwarg = "slaPolicyID"
    audit_target = "slaPolicies"
    webhook_events = True
    openapi_tag = (
        "SLA policies",
        "Response and resolution targets per priority; the first policy in `ordering` whose conditions hold "
        "for a ticket applies to it (the ticket's `sla`).",
    )
    noun = ("SLA policy", "SLA policies")
