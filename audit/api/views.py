from rest_framework import mixins

from audit.api.serializers import AuditEntrySerializer
from audit.filters import AuditEntryFilterSet
from audit.models import AuditEntry
from helpdesk.api.pagination import KeysetPagination
from helpdesk.api.permissions import OWNERS
from helpdesk.api.tenancy import LicenseScopedViewSet


class AuditLogViewSet(mixins.ListModelMixin, LicenseScopedViewSet):
    """`GET /v1/auditLog`: the license's audit entries, newest first, for owners only."""

    queryset = AuditEntry.objects.all()
    serializer_class = AuditEntrySerializer
    filterset_class = AuditEntryFilterSet
    pagination_class = KeysetPagination
    sort_fields = {"createdAt": "created_at"}
    roles = {"list": OWNERS}
