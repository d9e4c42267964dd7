"""The schema class of every view (REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS); kept light, as views import it."""

import inspect

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance

from helpdesk.api.schema_examples import EXAMPLES
from helpdesk.api.serializers import StrictSerializer


def _nullable(schema: dict) -> dict:
    if "$ref" in schema:  # OpenAPI 3.0 ignores the siblings of a $ref
        return {"allOf": [{"$ref": schema["$ref"]}], "nullable": True}
    return {**schema, "nullable": True}


class HelpdeskAutoSchema(AutoSchema):
    """Request bodies of strict serializers say what the server does with them
    (helpdesk.api.serializers.StrictSerializer): unknown fields are refused (`additionalProperties: false`),
    and `null` for an optional field is accepted as "not given" (so the optional properties are nullable)."""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(force_instance(serializer), StrictSerializer):
            schema["additionalProperties"] = False
            required = set(schema.get("required", []))
            for name, prop in schema.get("properties", {}).items():
                if name not in required and not prop.get("readOnly"):
                    schema["properties"][name] = _nullable(prop)
        return schema

    # A resource viewset (helpdesk.api.resources) declares the bodies of its writes and their descriptions; an
    # explicit @extend_schema on a method still wins (it subclasses this class).
    _DECLARED_BODIES = ("create", "partial_update")

    def get_request_serializer(self):
        if getattr(self.view, "action", None) in self._DECLARED_BODIES and hasattr(
            self.view, "get_input_serializer_class"
        ):
            return self.view.get_input_serializer_class()
        return super().get_request_serializer()

    def get_response_serializers(self):
        if getattr(self.view, "action", None) in self._DECLARED_BODIES and hasattr(
            self.view, "get_output_serializer_class"
        ):
            return self.view.get_output_serializer_class()
        return super().get_response_serializers()

    def get_description(self):
        declared = getattr(self.view, "descriptions", {}).get(getattr(self.view, "action", None))
        return inspect.cleandoc(declared) if declared else super().get_description()

    def _get_request_body(self, direction="request"):
        # drf-spectacular documents the bodies of POST, PUT and PATCH only; a DELETE that takes one names its
        # action in the view's `delete_bodies` (the ticket sub-resources' {agentIDs}). A private method of the
        # library: tests/test_ticket_sub_resources.py fails if the body is no longer documented.
        if self.method != "DELETE" or getattr(self.view, "action", None) not in getattr(
            self.view, "delete_bodies", ()
        ):
            return super()._get_request_body(direction)
        self.method = "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"

    def get_examples(self):
        return [*super().get_examples(), *EXAMPLES.get(self.get_operation_id(), [])]

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if getattr(field, "unique", False) and schema and schema.get("type") == "array":
            schema["uniqueItems"] = True  # StrictListField(unique=True) refuses repeats
        return schema

    def _get_request_for_media_type(self, serializer, direction="request"):
        # A bulk PATCH is not a partial update: its body's `ids` and `fields` are required.
        if getattr(self.view, "action", None) == "bulk_update":
            method, self.method = self.method, "POST"
            try:
                return super()._get_request_for_media_type(serializer, direction)
            finally:
                self.method = method
        return super()._get_request_for_media_type(serializer, direction)
