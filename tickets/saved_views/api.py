"""`GET, POST /v1/views` · `GET, PATCH, DELETE /v1/views/{ID}` · `GET /v1/views/{ID}/tickets` ·
`GET /v1/views/counts`. Everyone reads the shared views and their own private ones (no one else's, owners
included); owners write shared views, owners and normal agents their own private ones."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Q
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from helpdesk.api.fields import JSONObjectField, StrictCharField, StrictIntegerField, StrictUUIDField
from helpdesk.api.pagination import PAGINATION_PARAMS, KeysetPagination
from helpdesk.api.permissions import WRITERS
from helpdesk.api.relative_dates import TimezoneField
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from helpdesk.replicas import read_from_replica
from tickets import selectors
from tickets.api.serializers import TicketDocSerializer
from tickets.saved_views import selectors as view_selectors
from tickets.saved_views import services
from tickets.saved_views.models import View

REQUEST_PARAMS = frozenset({"timezone", *PAGINATION_PARAMS})  # what GET .../tickets takes besides the filters
FILTERS_EXAMPLE = {
    "status": "open",
    "assignment.agentID": "none",
    "tagIDs[]": ["0b6c1c4e-8f4a-4a53-9a43-5d0a3c6b2f11"],
}


class ViewSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    agentID = serializers.UUIDField(source="agent_id", read_only=True, allow_null=True)
    name = serializers.CharField(read_only=True)
    filters = serializers.JSONField(read_only=True)
    ordering = serializers.IntegerField(read_only=True)


class ViewWriteSerializer(StrictSerializer):
    name = StrictCharField(max_length=200)
    # Ticket-search parameters ({name: value or [values]}): checked by the search itself in the service.
    filters = JSONObjectField(max_depth=3, max_size=16 * 1024)
    ordering = StrictIntegerField(min_value=-1_000_000, max_value=1_000_000)


class ViewCreateSerializer(ViewWriteSerializer):
    agentID = StrictUUIDField(source="agent_id", allow_null=True, required=False)
    filters = JSONObjectField(max_depth=3, max_size=16 * 1024, required=False)
    ordering = StrictIntegerField(min_value=-1_000_000, max_value=1_000_000, required=False)


class ViewCountSerializer(serializers.Serializer):
    ID = serializers.UUIDField()
    count = serializers.IntegerField()


def _query_parameters() -> list[OpenApiParameter]:
    paging = KeysetPagination(sort_fields=selectors.SORT_FIELDS).get_schema_operation_parameters(None)
    timezone = OpenApiParameter(
        "timezone", str, OpenApiParameter.QUERY, description="IANA time zone of the filters' relative dates."
    )
    return [timezone] + [
        OpenApiParameter(p["name"], p["schema"], OpenApiParameter.QUERY, description=p["description"])
        for p in paging
    ]


class ViewViewSet(ResourceViewSet):
    resource_name = "views"
    queryset = View.objects.order_by("ordering", "created_at", "id")
    serializer_class = ViewSerializer
    write_serializer_class = ViewWriteSerializer
    create_serializer_class = ViewCreateSerializer
    create_service = services.view_create
    update_service = services.view_update
    delete_service = services.view_delete
    writers = WRITERS  # normal agents their private views; shared ones are the owners' (the services say)
    lookup_url_kwarg = "viewID"
    pagination_class = None  # the caller's views, all of them (at most 100 private and 100 shared)
    audit_target = "views"
    webhook_events = True
    openapi_tag = ("Views", "Saved ticket searches, shared or private, with their tickets and exact counts.")
    noun = ("view", "views")
    descriptions = {
        "create": """
            `agentID` null (the default) saves a shared view (owners only); your own agent ID a private one,
            which no one else sees (owners included). `filters` holds ticket-search parameters as
            `GET /v1/tickets` takes them (`{"status": "open", "tagIDs[]": ["..."]}`), all but `timezone` and
            paging; an unknown or invalid one is a 400 naming it under `filters`, as the search would answer.
            At most 100 views per agent (and 100 shared ones): then 409 `limit_reached`.
        """,
    }

    def get_queryset(self):
        queryset = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):
            return queryset
        return queryset.filter(Q(agent__isnull=True) | Q(agent=self.request.agent))

    def perform_create(self, data):
        return services.view_create(license=self.request.license, author=self.request.agent, **data)

    def perform_update(self, instance, data):
        return services.view_update(view=instance, author=self.request.agent, **data)

    def perform_destroy(self, instance):
        services.view_delete(view=instance, author=self.request.agent)

    @extend_schema(
        summary="List a view's tickets",
        description=(
            "The ticket search with the view's filters: paging, cursors and the `X-Total-Results`, "
            "`X-Total-Pages` and `Link` headers exactly as `GET /v1/tickets`. Only `timezone` and the paging "
            "parameters may be added; the filters are the view's."
        ),
        parameters=_query_parameters(),
        responses={200: TicketDocSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    @read_from_replica
    def tickets(self, request, **kwargs):
        view = self.get_object()
        unknown = sorted(request.query_params.keys() - REQUEST_PARAMS)
        if unknown:
            raise ValidationError(
                {
                    name: ["Unknown parameter: a view's filters are saved with it (PATCH the view)."]
                    for name in unknown
                }
            )
        params = view_selectors.filters_query(view.filters)
        for name in request.query_params:
            params.setlist(name, request.query_params.getlist(name))
        # A team, tag or agent deleted since the view was saved matches no ticket (and is no 400).
        search = selectors.ticket_search(request.license, params, check_ids=False)
        return Response(search.documents, headers=search.headers(request, request.query_params))

    @extend_schema(
        summary="Count the tickets of every view",
        description=(
            "`[{ID, count}]` for every view the caller sees (shared and their own), in the views' order: each "
            "count exact and equal to the `X-Total-Results` of `GET /v1/views/{ID}/tickets` at the same moment."
        ),
        parameters=_query_parameters()[:1],
        responses={200: ViewCountSerializer(many=True)},
        examples=[
            OpenApiExample(
                "Two views",
                value=[{"ID": "5f2b8a8e-3c1d-4e0f-9a57-2b9d6c41e7a3", "count": 12}],
                response_only=True,
            )
        ],
    )
    @action(detail=False, methods=["get"])
    @read_from_replica
    def counts(self, request):
        unknown = sorted(request.query_params.keys() - {"timezone"})
        if unknown:
            raise ValidationError({name: ["Unknown parameter."] for name in unknown})
        try:  # checked here too: with no view, no search would read it (an unknown zone was a 200 and `[]`)
            TimezoneField().clean(request.query_params.get("timezone"))
        except DjangoValidationError as error:
            raise ValidationError({"timezone": error.messages}) from None
        counts = view_selectors.view_counts(
            request.license, self.get_queryset(), timezone=request.query_params.get("timezone")
        )
        return Response(ViewCountSerializer(counts, many=True).data)
