"""Strict input fields: a JSON body's types are what the contract says, never coerced from strings."""

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
