"""Base serializers: unknown body fields are a 400 naming them (no silent ignore, no mass assignment), and
`null` for an optional field is read as the client means it (not given, or cleared where the field allows null)."""

import copy

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


def _leaf(field) -> bool:
    """A field that holds no other field (not a serializer, no child) and copies itself as DRF's Field does."""
    return (
        not isinstance(field, serializers.BaseSerializer)
        and not hasattr(field, "child")
        and not hasattr(field, "child_relation")
        and type(field).__deepcopy__ is serializers.Field.__deepcopy__
    )


class LeafFieldsCopied:
    """On a serializer: each instance's fields are the declared ones copied, the leaves shallowly (`copy.copy`).

    DRF deep-copies the declared fields for every instance (`Serializer.get_fields`), i.e. builds each field again
    from its arguments, deep-copied too (choices, querysets, validators): 1.7 M interpreter instructions for the
    ticket create's root serializer alone; with the leaves copied shallowly a create is 18.19 -> 17.27 M
    (bench/README.md "create and mail in, fourth round"). A leaf's state after __init__ is
    only read while validating (its arguments, error messages, validators, choices): what a request writes on
    its copy (`bind`: name, parent, label, source) lands on the copy. Serializers and fields with a child are
    deep-copied as DRF does (a child is bound to its parent when built). tests/test_serializer_fields.py checks
    DRF's `get_fields` and `Field.__deepcopy__` are still what this replaces, and that a declared leaf is left
    unchanged by validations through its copies."""

    def get_fields(self):
        return {
            name: copy.copy(field) if _leaf(field) else copy.deepcopy(field)
            for name, field in self._declared_fields.items()
        }


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
