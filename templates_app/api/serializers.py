"""Template output (the spec's fields, letter for letter) and strict input validation of `content`."""

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import AttachmentOutputSerializer
from helpdesk.api.fields import StrictCharField, StrictEmailField, StrictUUIDField
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from templates_app.models import TYPE_HTML, TYPE_VISUAL
from templates_app.rendering import COLOR_RE, PLACEHOLDERS, unknown_placeholders

MAX_RECIPIENTS = 10
MAX_APPEARANCE_KEYS = 50
APPEARANCE_KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,49}$")
TYPES = [TYPE_HTML, TYPE_VISUAL]


class TemplateSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    content = serializers.JSONField(read_only=True)
    type = serializers.CharField(read_only=True)
    attachments = AttachmentOutputSerializer(many=True, read_only=True)

    class Meta:
        fields = [
            "ID", "licenseID", "createdAt", "createdBy", "createdByType", "updatedAt", "updatedBy",
            "name", "content", "type", "attachments",
        ]  # fmt: skip


_APPEARANCE_SCHEMA = {
    "type": "object",
    "maxProperties": MAX_APPEARANCE_KEYS,
    "propertyNames": {"pattern": APPEARANCE_KEY_RE.pattern},
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "type": {"type": "string", "enum": ["color"]},
            "value": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$", "nullable": True},
        },
        "required": ["type", "value"],
    },
}


@extend_schema_field(_APPEARANCE_SCHEMA)
class AppearanceField(serializers.Field):
    """`{key: {"type": "color", "value": "#rrggbb" | null}}`; nothing else is accepted."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be an object mapping a key to {type, value}.")
        if len(data) > MAX_APPEARANCE_KEYS:
            raise serializers.ValidationError(f"At most {MAX_APPEARANCE_KEYS} keys.")
        errors, value = {}, {}
        for key, item in data.items():
            if not APPEARANCE_KEY_RE.match(key):
                errors[key] = ["Keys are letters, digits, '-' and '_' (at most 50)."]
            elif not isinstance(item, dict) or set(item) != {"type", "value"}:
                errors[key] = ["Must be an object with exactly 'type' and 'value'."]
            elif item["type"] != "color":
                errors[key] = ["'type' must be 'color'."]
            elif item["value"] is not None and not (
                isinstance(item["value"], str) and COLOR_RE.match(item["value"])
            ):
                errors[key] = ["'value' must be a color '#rrggbb' or null."]
            else:
                value[key] = {"type": "color", "value": item["value"]}
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def to_representation(self, value):
        return value


def _placeholders_known(value: str) -> str:
    unknown = unknown_placeholders(value)
    if unknown:
        known = ", ".join("{{" + name + "}}" for name in PLACEHOLDERS)
        raise serializers.ValidationError(
            f"Unknown placeholder(s) {', '.join('{{' + n + '}}' for n in unknown)}; known: {known}."
        )
    return value


class ContentSerializer(StrictSerializer):
    text = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=100_000)
    html = StrictCharField(required=False, allow_blank=True, trim_whitespace=False, max_length=500_000)
    appearance = AppearanceField(required=False)

    def validate_text(self, value):
        return _placeholders_known(value)

    def validate_html(self, value):
        return _placeholders_known(value)


class TemplateCreateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200)
    content = ContentSerializer()
    type = serializers.ChoiceField(choices=TYPES, required=False, default=TYPE_HTML)
    transactionID = StrictUUIDField(required=False, source="transaction_id")


class TemplateUpdateSerializer(StrictSerializer):
    """The spec's update body: name, content, transactionID (the type is chosen at creation)."""

    name = StrictCharField(required=False, max_length=200)
    content = ContentSerializer(required=False)
    transactionID = StrictUUIDField(required=False, source="transaction_id")


class PreviewSerializer(StrictSerializer):
    content = ContentSerializer()
    type = serializers.ChoiceField(choices=TYPES, required=False, default=TYPE_HTML)


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "format": "email"},
        "minItems": 1,
        "maxItems": MAX_RECIPIENTS,
    }
)
class RecipientsField(serializers.Field):
    default_error_messages = {
        "not_a_list": "Must be an array of e-mail addresses.",
        "empty": "At least one recipient is required.",
        "too_many": f"At most {MAX_RECIPIENTS} recipients.",
        "invalid": "'{value}' is not a valid e-mail address.",
        "duplicate": "'{value}' is listed more than once.",
    }

    def to_internal_value(self, data):
        if not isinstance(data, list):
            self.fail("not_a_list")
        if not data:
            self.fail("empty")
        if len(data) > MAX_RECIPIENTS:
            self.fail("too_many")
        emails, email_field = [], StrictEmailField()
        for item in data:
            try:
                email = email_field.run_validation(item)
            except serializers.ValidationError:
                self.fail("invalid", value=str(item)[:254])
            if email in emails:
                self.fail("duplicate", value=email)
            emails.append(email)
        return emails


class SendTestMessageSerializer(PreviewSerializer):
    recipients = RecipientsField()


class RenderedSerializer(serializers.Serializer):
    text = serializers.CharField()
    html = serializers.CharField()


class ForwardingInstructionsSerializer(StrictSerializer):
    email = StrictEmailField()
