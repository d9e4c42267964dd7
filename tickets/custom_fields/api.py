"""`GET, POST /v1/customFields` · `GET, PATCH, DELETE /v1/customFields/{ID}`: everyone reads, owners write."""

from __future__ import annotations

from django.core.validators import RegexValidator
from rest_framework import serializers

from accounts.models import Team
from helpdesk.api.fields import StrictCharField, StrictListField
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from tickets.api.serializers import LicensedIDsField
from tickets.custom_fields import services
from tickets.custom_fields.models import ROLE_LEVELS, STATUSES, TYPES, CustomField


class CustomFieldSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    apiKey = serializers.CharField(source="api_key", read_only=True)
    displayName = serializers.CharField(source="display_name", read_only=True)
    type = serializers.CharField(read_only=True)
    roleLevel = serializers.CharField(source="role_level", read_only=True)
    status = serializers.CharField(read_only=True)
    options = serializers.ListField(child=serializers.CharField(), read_only=True)
    teamIDs = serializers.SerializerMethodField()

    def get_teamIDs(self, field) -> list[str]:
        return sorted(str(team.pk) for team in field.teams.all())


class CustomFieldWriteSerializer(StrictSerializer):
    """PATCH: the apiKey and the type are fixed at creation (stored values keep their meaning)."""

    displayName = StrictCharField(source="display_name", max_length=200)
    roleLevel = serializers.ChoiceField(source="role_level", choices=ROLE_LEVELS)
    status = serializers.ChoiceField(choices=STATUSES)
    options = StrictListField(child=StrictCharField(max_length=120), max_length=100)
    teamIDs = LicensedIDsField(Team.objects, source="teams")


class CustomFieldCreateSerializer(CustomFieldWriteSerializer):
    apiKey = StrictCharField(
        source="api_key",
        max_length=100,
        validators=[RegexValidator(r"^[A-Za-z0-9_-]{1,100}$", "Letters, digits, '_' and '-' only.")],
    )
    type = serializers.ChoiceField(choices=TYPES)
    roleLevel = serializers.ChoiceField(source="role_level", choices=ROLE_LEVELS, required=False)
    status = serializers.ChoiceField(choices=STATUSES, required=False)
    options = StrictListField(child=StrictCharField(max_length=120), max_length=100, required=False)
    teamIDs = LicensedIDsField(Team.objects, source="teams", required=False)


class CustomFieldViewSet(ResourceViewSet):
    resource_name = "customFields"
    queryset = CustomField.objects.prefetch_related("teams").order_by("api_key", "id")
    serializer_class = CustomFieldSerializer
    write_serializer_class = CustomFieldWriteSerializer
    create_serializer_class = CustomFieldCreateSerializer
    create_service = services.custom_field_create
    update_service = services.custom_field_update
    delete_service = services.custom_field_delete
    lookup_url_kwarg = "customFieldID"
    pagination_class = None  # a license's fields, all of them (at most 200)
    audit_target = "customFields"
    webhook_events = True
    openapi_tag = ("Custom fields", "Definitions of what a ticket's customFields may hold.")
    noun = ("custom field", "custom fields")
    descriptions = {
        "create": """
            `type`: `singleLine` (at most 120 characters), `multiLine` (1,000), `date` (`YYYY-MM-DD`), `url`,
            `number`, `dropdown` (with `options`), `checkbox`. `roleLevel`: `owner` (only owners set it),
            `normal`, `readOnly` (only rules, macros and OAuth apps set it). `teamIDs`: the teams whose tickets
            carry it (none: every ticket). At most 200 fields per license (409 `limit_reached`).
            Every ticket write checks `customFields` against these definitions (400 naming
            `customFields.<apiKey>`).
        """,
        "destroy": "A field whose values tickets hold is a 409 `in_use`: deactivate it instead (`status`).",
    }
