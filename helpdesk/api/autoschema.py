"""The schema class of every view (REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS); kept light, as views import it."""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance

from helpdesk.api.serializers import StrictSerializer


class HelpdeskAutoSchema(AutoSchema):
    """Request bodies of strict serializers declare `additionalProperties: false`: the server refuses unknown
    fields (helpdesk.api.serializers.StrictSerializer), so the document says so."""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(force_instance(serializer), StrictSerializer):
            schema["additionalProperties"] = False
        return schema
