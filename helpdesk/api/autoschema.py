"""The schema class of every view (REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS); kept light, as views import it."""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance

from helpdesk.api.schema_examples import EXAMPLES
from helpdesk.api.serializers import StrictSerializer


class HelpdeskAutoSchema(AutoSchema):
    """Request bodies of strict serializers declare `additionalProperties: false`: the server refuses unknown
    fields (helpdesk.api.serializers.StrictSerializer), so the document says so."""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(force_instance(serializer), StrictSerializer):
            schema["additionalProperties"] = False
        return schema

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
