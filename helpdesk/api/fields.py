"""Strict input fields: a JSON body's types are what the contract says, never coerced from strings."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        # The published schema's maxLength is the length sent: refused before surrounding whitespace is trimmed
        # (DRF checks the trimmed value only).
        if self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictEmailField(serializers.EmailField):
    default_error_messages = {"invalid": "Enter a valid e-mail address."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data).strip().lower()


class StrictUUIDField(serializers.UUIDField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class StrictListField(serializers.ListField):
    """A JSON array (never a string or object); `unique` rejects repeats."""

    default_error_messages = {"not_unique": "Items must be unique."}

    def __init__(self, *args, unique=False, **kwargs):
        self.unique = unique
        super().__init__(*args, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, list):
            self.fail("not_a_list", input_type=type(data).__name__)
        value = super().to_internal_value(data)
        if self.unique and len({str(v) for v in value}) != len(value):
            self.fail("not_unique")
        return value


class BoundedJSONField(serializers.JSONField):
    """A free-form JSON value (customFields, richTextObj, ...) with bounded nesting and size.

    `kind` is "object", "array" or None (any JSON value): use JSONObjectField or JSONArrayField. The parser already refused NUL characters, lone
    surrogates and extreme nesting in the whole body; this checks again (a field is also fed from elsewhere,
    e.g. a test or an internal caller) with the field's own, tighter limits.
    """

    default_error_messages = {
        "not_an_object": "Expected a JSON object.",
        "not_an_array": "Expected a JSON array.",
        "limit": "{message}",
    }

    kind = None

    def __init__(self, *args, max_depth=8, max_size=64 * 1024, **kwargs):
        self.max_depth, self.max_size = max_depth, max_size
        super().__init__(*args, **kwargs)

    def to_internal_value(self, data):
        from helpdesk.api.json_input import JSONLimitError, check_json

        if self.kind == "object" and not isinstance(data, dict):
            self.fail("not_an_object")
        if self.kind == "array" and not isinstance(data, list):
            self.fail("not_an_array")
        try:
            check_json(data, max_depth=self.max_depth, max_size=self.max_size)
        except JSONLimitError as exc:
            where = f" (at {self.field_name}.{exc.path})" if exc.path else ""
            self.fail("limit", message=exc.message + where)
        return super().to_internal_value(data)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(BoundedJSONField):
    kind = "object"


@extend_schema_field({"type": "array", "items": {}})
class JSONArrayField(BoundedJSONField):
    kind = "array"
