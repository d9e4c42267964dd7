"""Tenancy in one place: every API viewset over license-owned data derives from `LicenseScopedViewSet`.

`get_queryset()` applies `for_license(request.license)`, so an object of another license is a 404 through
`get_object()` exactly as a missing one is (never reveal existence).
"""

from django.core.exceptions import ValidationError
from rest_framework import viewsets
from rest_framework.exceptions import NotFound


class LicenseScopedViewSet(viewsets.GenericViewSet):
    queryset = None
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return self.queryset.for_license(self.request.license)

    def get_object(self):
        queryset = self.get_queryset()
        lookup = self.kwargs[self.lookup_url_kwarg or self.lookup_field]
        try:
            obj = queryset.get(**{self.lookup_field: lookup})
        except (queryset.model.DoesNotExist, ValueError, TypeError, ValidationError):
            raise NotFound() from None
        self.check_object_permissions(self.request, obj)
        return obj
