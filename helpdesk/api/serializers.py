"""Base serializers: unknown body fields are a 400 naming them (no silent ignore, no mass assignment), and
`null` for an optional field is read as the client means it (not given, or cleared where the field allows null)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from helpdesk.context import SYSTEM_ACTOR_ID
from helpdesk.timestamps import iso


class StrictSerializer(serializers.Serializer):
    default_error_messages = {"invalid": "Expected a JSON object."}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        writable = {name for name, field in self.fields.items() if not field.read_only}
        unknown = sorted(set(data) - writable)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        # Client libraries send `null` for options they leave unset: for an optional field that has no meaning
        # for null it is "not given". Fields declared allow_null keep it (it clears: jobTitle, an assignment's
        # agent); a required field's null stays an error.
        fields = self.fields
        unset = [
            name
            for name, value in data.items()
            if value is None and not fields[name].required and not fields[name].allow_null
        ]
        if unset:
            data = {name: value for name, value in data.items() if name not in unset}
        return super().to_internal_value(data)


class TimestampField(serializers.DateTimeField):
    """Output in the contract's form: UTC with milliseconds and `Z`."""

    def to_representation(self, value):
        return iso(value)


@extend_schema_field(OpenApiTypes.UUID)
class StampIDField(serializers.CharField):
    """`createdBy`/`updatedBy`: an agent ID, or SYSTEM_ACTOR_ID; never null or empty (rows stamped by the system
    before the rule hold null, or "" on a license, and mean the system)."""

    def get_attribute(self, instance):  # DRF skips to_representation() for None
        return super().get_attribute(instance) or SYSTEM_ACTOR_ID

    def to_representation(self, value):
        return str(value)


class StampedOutputSerializer(serializers.Serializer):
    """createdAt/createdBy/createdByType/updatedAt/updatedBy, shared by every stamped resource."""

    createdAt = TimestampField(source="created_at", read_only=True)
    createdBy = StampIDField(source="created_by", read_only=True)
    createdByType = serializers.CharField(source="created_by_type", read_only=True)
    updatedAt = TimestampField(source="updated_at", read_only=True)
    updatedBy = StampIDField(source="updated_by", read_only=True)

    def get_fields(self):
        """The document's keys in the order its `Meta.fields` lists them (the stamps among the resource's own),
        then any it does not list."""
        fields = super().get_fields()
        order = getattr(getattr(self, "Meta", None), "fields", None) or ()
        return {**{name: fields[name] for name in order if name in fields}, **fields}
