"""The OpenAPI document's view (its hooks are in helpdesk/api/schema.py, which the apps' ready() reach without
loading drf-spectacular's views)."""

import threading

from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework.response import Response


class SchemaView(SpectacularJSONAPIView):
    """The OpenAPI document, generated on the first request of the process and kept: it only changes with the
    code (generating it walks every view and serializer: ~1 s, and it would repeat drf-spectacular's warnings)."""

    _document: dict | None = None
    _lock = threading.Lock()

    def _get_schema_response(self, request):
        with SchemaView._lock:
            if SchemaView._document is None:
                generator = self.generator_class(
                    urlconf=self.urlconf, api_version=None, patterns=self.patterns
                )
                SchemaView._document = generator.get_schema(request=None, public=True)
        return Response(SchemaView._document)
